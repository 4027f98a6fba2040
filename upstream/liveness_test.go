package upstream_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// waitEvent waits (bounded) for an event of the session that pred accepts.
func waitEvent(t *testing.T, rec *recorder, pred func(sb.Event) bool) sb.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range rec.all() {
			if pred(e) {
				return e
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no such event; saw %+v", rec.all())
	return sb.Event{}
}

// A stdio server that is alive but no longer answers (stopped) is found by
// the health probe, dropped, killed with its group, and replaced.
func TestHungStdioServerIsDroppedAndReplaced(t *testing.T) {
	s, rec := newSession(t, stdioConfig(t), &upstream.Options{HealthInterval: 100 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hung := s.Info().PID
	if err := syscall.Kill(hung, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	drop := waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonDropped })
	if drop.Error == nil || drop.Error.Code != sb.CodeProbeTimeout || drop.Error.Phase != sb.PhaseRuntime {
		t.Fatalf("drop %+v, want runtime/probe_timeout", drop.Error)
	}
	info, err := s.WaitFor(context.Background(), func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.PID != hung })
	if err != nil {
		t.Fatal(err)
	}
	if d := info.LastDrop; d == nil || d.Code != sb.CodeProbeTimeout || info.Error != nil {
		t.Errorf("after the reconnect: last drop %+v, error %+v; want the probe timeout kept, the error cleared", d, info.Error)
	}
	if proc.Alive(hung) {
		syscall.Kill(hung, syscall.SIGKILL)
		t.Errorf("the hung process %d was left running", hung)
	}
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("the replacement (pid %d) does not answer: %v", info.PID, err)
	}
}

// A busy stdio server (a call in flight) that misses a probe is not killed:
// a server that runs one request at a time is busy, not hung.
func TestProbeMissedDuringACallIsNotADrop(t *testing.T) {
	s, rec := newSession(t, stdioConfig(t), &upstream.Options{HealthInterval: 100 * time.Millisecond, ProbeTimeout: 200 * time.Millisecond})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	done := make(chan error, 1)
	var ended time.Time
	go func() {
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{Timeout: 1500 * time.Millisecond})
		ended = time.Now()
		done <- err
	}()
	// Wait until the call is in flight, then stop the server: probes now
	// go unanswered while the call waits, as with a single-threaded server.
	waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonConnected })
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGSTOP)
	err := <-done
	syscall.Kill(pid, syscall.SIGCONT)
	if !errors.Is(err, upstream.ErrTimeout) {
		t.Fatalf("the call ended with %v, want its own timeout", err)
	}
	// A probe sent once the call has ended may rightly drop the server,
	// which stays stopped until the SIGCONT above (late at load): only a
	// drop that a probe sent during the call could make counts, one
	// before the call's end plus a probe's timeout.
	for _, e := range rec.all() {
		if e.Reason == sb.ReasonDropped && e.At.Before(ended.Add(200*time.Millisecond)) {
			t.Fatalf("dropped (%s) while a call was in flight, or by a probe sent during it; want no drop", e.Error.Message)
		}
	}
}

// A remote server that went away is dropped as soon as a request is
// refused a connection, not at the next health probe, and a call that was
// refused says that it never ran.
//
// The server keeps no connection alive: a request written to a kept-alive
// connection that died with the server draws EOF, not a refusal, and the
// session rightly cannot tell whether the server read it first (the call
// "may or may not have run"), however dead the server is by then.
func TestRefusedConnectionDropsAtOnce(t *testing.T) {
	for _, transport := range []sb.Transport{sb.TransportStreamableHTTP, sb.TransportSSE} {
		t.Run(string(transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t, "-no-keepalive")
			cfg := &sb.ServerConfig{Name: "test", Transport: transport, URL: srv.URL, Retry: &sb.RetryConfig{MaxAttempts: 1}}
			if transport == sb.TransportSSE {
				cfg.URL = srv.BaseURL + "/sse"
			}
			s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: time.Hour})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			srv.Kill()
			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{Timeout: 5 * time.Second})
			if !errors.Is(err, upstream.ErrUnavailable) || errors.Is(err, upstream.ErrConnectionLost) {
				t.Fatalf("err = %v, want ErrUnavailable: nothing listens, so the call never ran", err)
			}
			drop := waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonDropped })
			t.Logf("dropped with %s: %s", drop.Error.Code, drop.Error.Message)
		})
	}
}

// A frame over the size cap resets the connection: calls made from then on
// wait for the reconnect, and only a call that was alone in flight is told
// its result was too large; the others lost their connection.
func TestOversizedFrameDoesNotFailOtherCalls(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), &upstream.Options{MaxResultBytes: 4096})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(context.Background(), "big", map[string]any{"bytes": 100000}, sb.InvokeOptions{}); !errors.Is(err, upstream.ErrResultTooLarge) {
		t.Fatalf("a lone oversized result: err = %v, want ErrResultTooLarge", err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []error
	ok := 0
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "small"}, sb.InvokeOptions{Timeout: 10 * time.Second})
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, upstream.ErrConnectionLost):
					// in flight when the connection was reset
				default:
					wrong = append(wrong, err)
				}
				mu.Unlock()
			}
		})
	}
	_, bigErr := s.CallTool(context.Background(), "big", map[string]any{"bytes": 100000}, sb.InvokeOptions{})
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "after"}, sb.InvokeOptions{Timeout: 10 * time.Second}); err != nil {
		t.Errorf("a call made after the reset failed instead of waiting for the reconnect: %v", err)
	}
	stop.Store(true)
	wg.Wait()
	if !errors.Is(bigErr, upstream.ErrResultTooLarge) && !errors.Is(bigErr, upstream.ErrConnectionLost) {
		t.Errorf("the oversized call: %v", bigErr)
	}
	for _, err := range wrong {
		t.Errorf("a small call failed with %v", err)
	}
	t.Logf("%d small calls succeeded around the reset", ok)
}

// A server that lists more tools than Switchboard keeps is served its
// first maxListItems, and the cut is said in the log, not done silently.
func TestListCutAtTheCapIsLogged(t *testing.T) {
	var logs testserver.Buffer
	s := upstream.New(stdioConfig(t, "-tools", "10005"), &upstream.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Info().ToolCount; n != 10000 {
		t.Errorf("%d tools kept, want 10000", n)
	}
	if !strings.Contains(logs.String(), "the server lists more items than Switchboard keeps") || !strings.Contains(logs.String(), "tools/list") {
		t.Errorf("no warning about the cut in the log:\n%s", logs.String())
	}
}
