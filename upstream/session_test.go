package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// goleak's Cleanup replaces its own exit, so it must exit itself.
		goleak.Cleanup(func(code int) { testserver.RemoveBinary(); os.Exit(code) }),
		// The shared HTTP transport keeps idle keep-alive connections.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

// recorder collects a session's events.
type recorder struct {
	mu     sync.Mutex
	events []sb.Event
}

func (r *recorder) add(e sb.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []sb.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) count(reason sb.Reason) int {
	n := 0
	for _, e := range r.all() {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// newSession returns a session whose events are recorded and whose logs go
// to the test's output; it is shut down when the test ends.
func newSession(t *testing.T, cfg *sb.ServerConfig, opts *upstream.Options) (*upstream.Session, *recorder) {
	t.Helper()
	rec := &recorder{}
	if opts == nil {
		opts = &upstream.Options{}
	}
	opts.OnEvent = rec.add
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := upstream.New(cfg, opts)
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, rec
}

func stdioConfig(t *testing.T, args ...string) *sb.ServerConfig {
	return &sb.ServerConfig{
		Name:            "test",
		Transport:       sb.TransportStdio,
		Command:         testserver.Binary(t),
		Args:            args,
		ProtocolVersion: "2025-11-25",
	}
}

func toolNames(info sb.RuntimeInfo) []string {
	var names []string
	for _, t := range info.Tools {
		names = append(names, t.Name)
	}
	return names
}

func waitFor(t *testing.T, s *upstream.Session, what string, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := s.WaitFor(ctx, pred)
	if err != nil {
		info.Tools = nil // their schemas would bury the rest
		t.Fatalf("waiting for %s: %v; last info: %+v", what, err, info)
	}
	return info
}

func TestConnectAndListTools(t *testing.T) {
	bin := testserver.Binary(t)
	httpSrv := testserver.StartHTTP(t)
	sseSrv := testserver.StartHTTP(t, "-sse-only")
	for _, tc := range []struct {
		name          string
		cfg           sb.ServerConfig
		wantTransport sb.Transport
	}{
		{"stdio", sb.ServerConfig{Transport: sb.TransportStdio, Command: bin}, sb.TransportStdio},
		{"streamable-http", sb.ServerConfig{Transport: sb.TransportStreamableHTTP, URL: httpSrv.URL}, sb.TransportStreamableHTTP},
		{"remote prefers streamable-http", sb.ServerConfig{Transport: sb.TransportRemote, URL: httpSrv.URL}, sb.TransportStreamableHTTP},
		{"sse", sb.ServerConfig{Transport: sb.TransportSSE, URL: httpSrv.BaseURL + "/sse"}, sb.TransportSSE},
		{"remote falls back to sse on 404", sb.ServerConfig{Transport: sb.TransportRemote, URL: sseSrv.URL}, sb.TransportSSE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Name = "test"
			s, _ := newSession(t, &cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatalf("Start: %v", err)
			}
			info := s.Info()
			if info.Status != sb.StatusConnected || info.Transport != tc.wantTransport {
				t.Fatalf("status %s transport %s, want connected %s", info.Status, info.Transport, tc.wantTransport)
			}
			for _, want := range []string{"echo", "slow", "crash"} {
				if !slices.Contains(toolNames(info), want) {
					t.Errorf("tool %q missing from %v", want, toolNames(info))
				}
			}
			if info.ToolCount != len(info.Tools) || info.ResourceCount == 0 || info.PromptCount == 0 {
				t.Errorf("counts: tools %d/%d resources %d prompts %d", info.ToolCount, len(info.Tools), info.ResourceCount, info.PromptCount)
			}
			if info.ServerInfo == nil || info.ServerInfo.Name != "testserver" || info.ProtocolVersion == "" {
				t.Errorf("server info %+v protocol %q", info.ServerInfo, info.ProtocolVersion)
			}
			if (tc.wantTransport == sb.TransportStdio) != (info.PID > 0) {
				t.Errorf("pid = %d for transport %s", info.PID, info.Transport)
			}
			cs, err := s.Client(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("echo: %v %+v", err, res)
			}
		})
	}
}

func TestToolsListedAcrossPages(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t, "-tools", "120", "-page-size", "7"), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	names := toolNames(s.Info())
	if !slices.Contains(names, "extra_119") || !slices.Contains(names, "echo") {
		t.Fatalf("listed %d tools, missing the last page: %v", len(names), names)
	}
}

func TestReconnectAfterProcessKilled(t *testing.T) {
	s, rec := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Connected again after the drop, with a new process.
	info := waitFor(t, s, "reconnect", func(i sb.RuntimeInfo) bool {
		return i.Status == sb.StatusConnected && i.Reconnects > 0
	})
	if info.Reconnects != 1 || info.Attempt != 0 || info.PID == 0 || info.PID == pid {
		t.Fatalf("reconnects %d attempt %d pid %d, want 1, 0 and a new process (not %d)", info.Reconnects, info.Attempt, info.PID, pid)
	}
	if len(info.Tools) == 0 {
		t.Fatal("tools not listed again after the reconnect")
	}
	var dropped *sb.Event
	for _, e := range rec.all() {
		if e.Reason == sb.ReasonDropped {
			dropped = &e
		}
	}
	if dropped == nil || dropped.Error == nil || dropped.Error.Phase != sb.PhaseRuntime ||
		!strings.Contains(dropped.Error.Message, "killed") {
		t.Fatalf("drop event %+v, want phase runtime naming the kill", dropped)
	}
}

// TestConnectedSinceIsTheMomentOfTheCurrentConnection: RuntimeInfo's
// ConnectedSince (connected_since) is there only while the session is
// connected, and it is the moment the current connection was made: not
// the start of its attempt, not the moment it is read, and a new moment
// after each reconnect.
func TestConnectedSinceIsTheMomentOfTheCurrentConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		release := make(chan struct{})
		d.before = func(ctx context.Context, n int) error {
			switch n {
			case 1:
				time.Sleep(2 * time.Second) // a slow first handshake
			case 2:
				select { // the reconnect waits for the test
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
		cfg := memConfig()
		cfg.Retry = &sb.RetryConfig{MaxAttempts: 1}
		s, rec := newSession(t, cfg, &upstream.Options{Dial: d.dial, HealthInterval: -1})
		if cs := s.Info().ConnectedSince; cs != nil {
			t.Errorf("before Start: connected_since %v, want none", cs)
		}

		begin := time.Now()
		started := make(chan error, 1)
		go func() { started <- s.Start(context.Background()) }()
		synctest.Wait() // the first handshake is under way
		if info := s.Info(); info.Status != sb.StatusConnecting || info.ConnectedSince != nil {
			t.Errorf("while connecting: status %s connected_since %v, want connecting and none", info.Status, info.ConnectedSince)
		}
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		connectedAt := begin.Add(2 * time.Second)
		time.Sleep(5 * time.Second)
		if cs := s.Info().ConnectedSince; cs == nil || !cs.Equal(connectedAt) {
			t.Errorf("connected: connected_since %v, want %v (when the handshake completed, 2s after the attempt began and 5s ago)", cs, connectedAt)
		}

		dropAt := time.Now()
		d.conn(1).drop()
		synctest.Wait() // the session has seen the drop; its reconnect is held
		if info := s.Info(); info.Status != sb.StatusConnecting || info.Reconnects != 1 || info.ConnectedSince != nil {
			t.Errorf("reconnecting after a drop: status %s reconnects %d connected_since %v, want connecting, 1 and none",
				info.Status, info.Reconnects, info.ConnectedSince)
		}
		time.Sleep(3 * time.Second)
		close(release)
		info := waitFor(t, s, "the reconnect", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		reconnectedAt := dropAt.Add(3 * time.Second)
		if cs := info.ConnectedSince; cs == nil || !cs.Equal(reconnectedAt) {
			t.Errorf("reconnected: connected_since %v, want %v (the reconnect, not the first connection at %v)", cs, reconnectedAt, connectedAt)
		}

		// Dropped again at once: a flap, which with one attempt allowed
		// ends in status error.
		d.conn(2).drop()
		info = waitFor(t, s, "status error", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusError })
		if info.ConnectedSince != nil {
			t.Errorf("in error: connected_since %v, want none", info.ConnectedSince)
		}

		// Each value is the time of its connected event.
		var at []time.Time
		for _, e := range rec.all() {
			if e.Reason == sb.ReasonConnected {
				at = append(at, e.At)
			}
		}
		if len(at) != 2 || !at[0].Equal(connectedAt) || !at[1].Equal(reconnectedAt) {
			t.Errorf("connected events at %v, want %v and %v", at, connectedAt, reconnectedAt)
		}
	})
}

func TestFailedAttemptsBackOff2_4_8ThenError(t *testing.T) {
	cfg := stdioConfig(t, "-exit-at-startup", "1")
	synctest.Test(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			starts []time.Time
		)
		s := upstream.New(cfg, &upstream.Options{
			Logger: slog.New(slog.DiscardHandler),
			OnEvent: func(e sb.Event) {
				if e.Reason == sb.ReasonStarting {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
				}
			},
		})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		err := s.Start(context.Background())
		var uerr *upstream.Error
		if !errors.As(err, &uerr) || uerr.Phase != sb.PhaseSpawn || !strings.Contains(uerr.Message, "exited with status 1") {
			t.Fatalf("Start = %v, want a spawn error naming the exit status", err)
		}
		info := s.Info()
		if info.Status != sb.StatusError || info.Attempt != 4 || info.NextRetryAt == nil {
			t.Fatalf("after 4 attempts: %+v", info)
		}
		if !strings.Contains(info.Error.Message, "last stderr line: testserver: exit code=1 reason=exit-at-startup") {
			t.Errorf("error %q does not quote the server's stderr", info.Error.Message)
		}
		mu.Lock()
		gaps := []time.Duration{starts[1].Sub(starts[0]), starts[2].Sub(starts[1]), starts[3].Sub(starts[2])}
		mu.Unlock()
		for i, nominal := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
			lo, hi := nominal*8/10, nominal*12/10
			if gaps[i] < lo || gaps[i] > hi {
				t.Errorf("gap %d = %v, want %v±20%%", i+1, gaps[i], nominal)
			}
		}
		// The slow retry comes about a minute later.
		if d := time.Until(*info.NextRetryAt); d < 48*time.Second || d > 72*time.Second {
			t.Errorf("slow retry due in %v, want 60s±20%%", d)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestShutdownDuringBackoffMakesNoFurtherAttempt(t *testing.T) {
	cfg := stdioConfig(t, "-exit-at-startup", "1")
	synctest.Test(t, func(t *testing.T) {
		failed := make(chan struct{}, 10)
		var starts, stopped int
		var mu sync.Mutex
		s := upstream.New(cfg, &upstream.Options{
			Logger: slog.New(slog.DiscardHandler),
			OnEvent: func(e sb.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Reason {
				case sb.ReasonStarting:
					starts++
				case sb.ReasonAttemptFailed:
					failed <- struct{}{}
				case sb.ReasonStopped:
					stopped++
				}
			},
		})
		go s.Start(context.Background())
		<-failed // the first attempt failed; the session now waits 2 s
		begin := time.Now()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d != 0 {
			t.Errorf("Shutdown during backoff took %v of (fake) time, want 0", d)
		}
		time.Sleep(time.Hour) // long past every retry that could have been scheduled
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if starts != 1 || stopped != 1 {
			t.Fatalf("attempts started %d, stopped events %d; want 1 and 1", starts, stopped)
		}
	})
}

func TestHealsThroughSlowRetry(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "healthy")
	cfg := stdioConfig(t, "-exit-at-startup-unless", marker)
	synctest.Test(t, func(t *testing.T) {
		s := upstream.New(cfg, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		if err := s.Start(context.Background()); err == nil {
			t.Fatal("Start succeeded against a server that exits at startup")
		}
		if info := s.Info(); info.Status != sb.StatusError || info.Attempt != 4 {
			t.Fatalf("after the fast retries: %+v", info)
		}
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		begin := time.Now()
		info, err := s.WaitFor(ctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		if err != nil {
			t.Fatalf("not healed by the slow retry: %v %+v", err, info)
		}
		if d := time.Since(begin); d < 48*time.Second || d > 72*time.Second {
			t.Errorf("healed after %v, want the first slow retry at 60s±20%%", d)
		}
		if info.Error != nil || info.NextRetryAt != nil {
			t.Errorf("connected but still shows error %+v next retry %v", info.Error, info.NextRetryAt)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNoFallbackOn401(t *testing.T) {
	srv := testserver.StartHTTP(t, "-status", "401")
	s, rec := newSession(t, &sb.ServerConfig{Name: "test", Transport: sb.TransportRemote, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer sekrit-token"}}, nil)
	err := s.Start(context.Background())
	var uerr *upstream.Error
	if !errors.As(err, &uerr) || uerr.Phase != sb.PhaseAuth || uerr.Code != "http_401" {
		t.Fatalf("Start = %v, want phase auth http_401", err)
	}
	info := s.Info()
	if info.Status != sb.StatusError || info.Attempt != 1 || info.NextRetryAt != nil {
		t.Fatalf("after 401: status %s attempt %d next retry %v; want error, 1, none", info.Status, info.Attempt, info.NextRetryAt)
	}
	if !strings.Contains(info.Error.Message, "HTTP 401") || !strings.Contains(info.Error.Message, "Authorization") {
		t.Errorf("message %q does not say what to fix", info.Error.Message)
	}
	if strings.Contains(fmt.Sprint(rec.all()), "sekrit") {
		t.Error("a header value leaked into an event")
	}
	if n := rec.count(sb.ReasonStarting); n != 1 {
		t.Errorf("%d attempts against a 401, want 1", n)
	}
}

func TestNoFallbackOn429Or500(t *testing.T) {
	for _, status := range []string{"429", "500"} {
		t.Run(status, func(t *testing.T) {
			srv := testserver.StartHTTP(t, "-status", status)
			cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportRemote, URL: srv.URL,
				Retry: &sb.RetryConfig{MaxAttempts: 1}}
			s, _ := newSession(t, cfg, nil)
			err := s.Start(context.Background())
			var uerr *upstream.Error
			if !errors.As(err, &uerr) || string(uerr.Code) != "http_"+status || uerr.Phase != sb.PhaseConnect {
				t.Fatalf("Start = %v, want connect http_%s", err, status)
			}
		})
	}
}

func TestStartupTimeoutKeepsTryingInBackground(t *testing.T) {
	cfg := stdioConfig(t, "-hang-initialize")
	cfg.StartupTimeoutMS = 300
	s, _ := newSession(t, cfg, nil)
	// The error says it was the startup timeout that ended Start, not the
	// hung attempt (which never ends by itself).
	err := s.Start(context.Background())
	if !errors.Is(err, upstream.ErrStartupTimeout) {
		t.Fatalf("Start = %v, want ErrStartupTimeout", err)
	}
	info := s.Info()
	if !info.StartupTimedOut || info.Status == sb.StatusConnected {
		t.Fatalf("runtime info does not say the startup timed out: %+v", info)
	}
	// It keeps trying: the hung attempt fails and the next one starts.
	waitFor(t, s, "a failed attempt", func(i sb.RuntimeInfo) bool {
		return i.Attempt >= 1 && i.Error != nil && i.Error.Phase == sb.PhaseInitialize
	})
}

func TestSlowColdStartStillConnects(t *testing.T) {
	// The server sleeps 4 s before reading stdin, like npx installing a
	// package: longer than LangBot's cold-start handshake wait would allow
	// for a short startup timeout. The process must not be restarted.
	events := filepath.Join(t.TempDir(), "events")
	cfg := stdioConfig(t, "-startup-delay", "4s", "-events", events)
	cfg.ProtocolVersion = "" // auto
	cfg.StartupTimeoutMS = 20000
	s, rec := newSession(t, cfg, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	info := s.Info()
	if info.Attempt != 0 || rec.count(sb.ReasonStarting) != 1 {
		t.Fatalf("attempt %d, %d attempts started; want the first attempt to succeed", info.Attempt, rec.count(sb.ReasonStarting))
	}
	if info.ProtocolVersion != "2025-11-25" {
		t.Errorf("auto protocol over stdio negotiated %q", info.ProtocolVersion)
	}
	starts := 0
	for _, e := range testserver.ReadEvents(t, events) {
		if e.Event == "start" {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("server process started %d times, want 1", starts)
	}
}

func TestIgnoredDiscoverProbeDoesNotHang(t *testing.T) {
	// A remote server that never answers server/discover (2026-07-28): the
	// automatic probe is bounded and the session falls back to initialize.
	srv := testserver.StartHTTP(t, "-ignore-unknown")
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL, StartupTimeoutMS: 20000}
	s, _ := newSession(t, cfg, nil)
	// Connected at all, within the one attempt's 20 s startup timeout: a
	// probe without a bound of its own would have held the attempt until
	// that timeout failed it.
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if info := s.Info(); info.Attempt != 0 || info.Reconnects != 0 {
		t.Errorf("connected at attempt %d (%d reconnects); want the first attempt", info.Attempt, info.Reconnects)
	}
	if v := s.Info().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25 after the probe", v)
	}
}

func TestStartTwiceRunsOneLifecycle(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	s, rec := newSession(t, stdioConfig(t, "-events", events), nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Start(context.Background()) })
	}
	wg.Wait()
	if err := s.Start(context.Background()); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("Start errors: %v %v %v", errs[0], errs[1], err)
	}
	if n := rec.count(sb.ReasonStarting); n != 1 {
		t.Fatalf("%d attempts for three Starts, want 1", n)
	}
	starts := 0
	for _, e := range testserver.ReadEvents(t, events) {
		if e.Event == "start" {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d server processes for three Starts, want 1", starts)
	}
}

func TestShutdownLeavesNothing(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	s, _ := newSession(t, stdioConfig(t, "-spawn-child", "-events", events), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	child := testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "child" }, 10*time.Second).PID
	fdsBefore := countFDs(t)
	// Shutdown returns once the group is gone (its stop escalates on its
	// own timers, not on this test's clock).
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{pid, child} {
		if proc.Alive(p) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			t.Errorf("process %d (leader %d) is still running after Shutdown: %s", p, pid, st)
		}
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) && proc.GroupHasLiveMember(pid) {
		t.Errorf("process group %d still has members: %v", pid, err)
	}
	if after := countFDs(t); after > fdsBefore-3 {
		t.Errorf("open fds %d before Shutdown, %d after: the pipes were not all closed", fdsBefore, after)
	}
	if st := s.Status(); st != sb.StatusDisabled {
		t.Errorf("status %s after Shutdown, want disabled (nothing runs)", st)
	}
	// goleak (TestMain) checks that no goroutine is left.
}

func TestListChangedRefreshesTools(t *testing.T) {
	s, rec := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "brand_new"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "the new tool", func(i sb.RuntimeInfo) bool { return slices.Contains(toolNames(i), "brand_new") })
	if rec.count(sb.ReasonToolsChanged) == 0 {
		t.Error("no tools_changed event")
	}
}

func TestCommandNotFoundIsNotRetriedFast(t *testing.T) {
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStdio, Command: "switchboard-no-such-command"}
	s, rec := newSession(t, cfg, nil)
	err := s.Start(context.Background())
	var uerr *upstream.Error
	if !errors.As(err, &uerr) || uerr.Phase != sb.PhaseSpawn || uerr.Code != "command_not_found" ||
		!strings.Contains(uerr.Message, "switchboard-no-such-command: command not found") {
		t.Fatalf("Start = %v", err)
	}
	if n := rec.count(sb.ReasonStarting); n != 1 {
		t.Fatalf("%d attempts, want 1 (no fast retries)", n)
	}
	if s.Info().NextRetryAt == nil {
		t.Error("no slow retry scheduled: installing the command later should heal the server")
	}
}

func TestInvalidConfigFailsInPhaseConfig(t *testing.T) {
	s, _ := newSession(t, &sb.ServerConfig{Name: "Bad Name", Transport: sb.TransportStdio}, nil)
	err := s.Start(context.Background())
	var uerr *upstream.Error
	if !errors.As(err, &uerr) || uerr.Phase != sb.PhaseConfig || !strings.Contains(uerr.Message, "command") || !strings.Contains(uerr.Message, "name") {
		t.Fatalf("Start = %v, want a config error naming the fields", err)
	}
	if s.Info().NextRetryAt != nil {
		t.Error("an invalid config is retried")
	}
}

func TestStderrIsKeptBoundedAndSecretsRedacted(t *testing.T) {
	cfg := stdioConfig(t, "-stderr-lines", "30")
	cfg.Env = map[string]string{"API_KEY": "hunter2-secret"}
	s, _ := newSession(t, cfg, &upstream.Options{LogLines: 10})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The server wrote its lines before the handshake; they are read
	// within a rest of the stderr pipe (internal/proc), not necessarily
	// before Start returns.
	var lines []string
	for i := 0; ; i++ {
		lines = s.Logs()
		if strings.Contains(strings.Join(lines, "\n"), "stderr line 30") {
			break
		}
		if i == 1000 {
			t.Fatalf("newest line not read within 10s: %q", lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(lines) != 10 {
		t.Fatalf("kept %d lines, want 10: %q", len(lines), lines)
	}
}

func TestEnvAndCwdReachTheProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := stdioConfig(t, "-pid-file", "pid")
	cfg.Cwd = dir
	s, _ := newSession(t, cfg, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatalf("relative -pid-file not written in cwd: %v", err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid != s.Info().PID {
		t.Fatalf("pid file says %s, runtime info %d", b, s.Info().PID)
	}
}

func countFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func adminPost(t *testing.T, srv *testserver.Process, op string) {
	t.Helper()
	resp, err := http.Post(srv.BaseURL+"/admin/"+op, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("/admin/%s: %s", op, resp.Status)
	}
}

// TestHealthProbeDetectsBlackHoleAndHeals: a server that goes silent (its
// connection black-holed: nothing the session sends arrives, so nothing is
// answered) is found by the first health probe after it went silent, at
// that tick plus the probe timeout on the fake clock, and reported as a
// probe timeout; the reconnect that follows waits while the server cannot
// be reached, and the session heals as soon as it can.
func TestHealthProbeDetectsBlackHoleAndHeals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, probeTimeout = 200 * time.Millisecond, 300 * time.Millisecond
		d := newMemDialer(t, testserver.Options{})
		reachable := make(chan struct{})
		d.before = func(ctx context.Context, n int) error {
			if n == 1 {
				return nil
			}
			select { // a new connection gets through once the test says so
			case <-reachable:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s, rec := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: interval, ProbeTimeout: probeTimeout})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		connectedAt := time.Now()
		time.Sleep(3*interval + 50*time.Millisecond) // three probes, answered
		if info := s.Info(); info.Status != sb.StatusConnected || rec.count(sb.ReasonDropped) != 0 {
			t.Fatalf("a server that answers its probes was taken for down: %+v", info)
		}

		d.conn(1).blackHole()
		info := waitFor(t, s, "the probe to notice", func(i sb.RuntimeInfo) bool { return i.Status != sb.StatusConnected })
		var drops []sb.Event
		for _, e := range rec.all() {
			if e.Reason == sb.ReasonDropped {
				drops = append(drops, e)
			}
		}
		// Silent since 3.25 intervals: the tick at 4 intervals sends the
		// probe that goes unanswered.
		detectedAt := connectedAt.Add(4*interval + probeTimeout)
		if len(drops) != 1 || drops[0].Error == nil || drops[0].Error.Code != sb.CodeProbeTimeout ||
			drops[0].Error.Phase != sb.PhaseRuntime || !drops[0].At.Equal(detectedAt) {
			t.Fatalf("drops %+v, want one probe timeout in phase runtime at %v", drops, detectedAt)
		}
		if info.Status != sb.StatusConnecting || info.Reconnects != 1 {
			t.Errorf("after the drop: status %s reconnects %d, want connecting and 1", info.Status, info.Reconnects)
		}

		time.Sleep(time.Second) // unreachable for a second
		healedAt := time.Now()
		close(reachable)
		info = waitFor(t, s, "the session to heal", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		if info.Reconnects != 1 || info.Attempt != 0 || info.ConnectedSince == nil || !info.ConnectedSince.Equal(healedAt) {
			t.Errorf("healed: %+v, want 1 reconnect, attempt 0, connected since %v", info, healedAt)
		}
	})
}

func TestForgottenHTTPSessionReconnects(t *testing.T) {
	srv := testserver.StartHTTP(t)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL}
	s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: 100 * time.Millisecond, ProbeTimeout: time.Second})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	adminPost(t, srv, "drop") // the server forgets the session: HTTP 404 from now on
	info := waitFor(t, s, "a reconnect", func(i sb.RuntimeInfo) bool {
		return i.Reconnects == 1 && i.Status == sb.StatusConnected
	})
	if info.Attempt != 0 {
		t.Errorf("a session expiry spent the retry budget: attempt %d", info.Attempt)
	}
	cs, err := s.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("call on the new session: %v", err)
	}
}

// TestMalformedJSONEndsInAnErrorPhase: a line that is not JSON ends what
// it interrupts, and the error says where: the handshake, the first
// listing, or a live connection (which is then replaced). The bad line is
// put exactly where each case needs it, in place of the server's response
// to one method. (The real stdio server's -malformed writes it right after
// the initialize response, where the go-sdk races its own
// notifications/initialized against reading the bad line, so the phase is
// initialize or discover from run to run: see
// TestMalformedStdioErrorNamesTheJSON.)
func TestMalformedJSONEndsInAnErrorPhase(t *testing.T) {
	for _, tc := range []struct {
		method string // whose response is not JSON
		phase  sb.Phase
		code   sb.Code
	}{
		{"initialize", sb.PhaseInitialize, sb.CodeInitializeFailed},
		{"tools/list", sb.PhaseDiscover, sb.CodeListFailed},
	} {
		t.Run(tc.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newMemDialer(t, testserver.Options{})
				d.corrupt = tc.method
				cfg := memConfig()
				cfg.Retry = &sb.RetryConfig{MaxAttempts: 1}
				s, rec := newSession(t, cfg, &upstream.Options{Dial: d.dial})
				err := s.Start(context.Background())
				var uerr *upstream.Error
				if !errors.As(err, &uerr) || !errors.Is(err, upstream.ErrUnavailable) {
					t.Fatalf("Start = %v, want an *upstream.Error wrapping ErrUnavailable", err)
				}
				if uerr.Phase != tc.phase || uerr.Code != tc.code || !strings.Contains(uerr.Message, "invalid character") {
					t.Errorf("Start: phase %s code %s %q; want phase %s code %s naming the JSON error",
						uerr.Phase, uerr.Code, uerr.Message, tc.phase, tc.code)
				}
				info := s.Info()
				if info.Status != sb.StatusError || info.Error == nil || info.Error.Phase != tc.phase || info.Error.Code != tc.code {
					t.Errorf("runtime info %+v error %+v, want status error in phase %s code %s", info, info.Error, tc.phase, tc.code)
				}
				if info.ConnectedSince != nil {
					t.Errorf("in error: connected_since %v, want none", info.ConnectedSince)
				}
				if n := rec.count(sb.ReasonConnected); n != 0 {
					t.Errorf("%d connected events: a session that never listed its tools was reported connected", n)
				}
			})
		})
	}

	// On a live connection: the call in flight is lost, the session drops
	// the connection (phase runtime) and connects again.
	t.Run("tools/call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := newMemDialer(t, testserver.Options{})
			d.corrupt = "tools/call"
			s, rec := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{})
			var ce *upstream.CallError
			if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrConnectionLost) || ce.Phase != sb.PhaseRuntime ||
				!strings.Contains(err.Error(), "invalid character") {
				t.Fatalf("CallTool = %v, want ErrConnectionLost in phase runtime naming the JSON error", err)
			}
			info := waitFor(t, s, "the reconnect", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.Reconnects == 1 })
			if info.Attempt != 0 || d.dials() != 2 {
				t.Errorf("attempt %d after %d dials, want a transparent reconnect (0 after 2)", info.Attempt, d.dials())
			}
			var drops []*sb.ErrorInfo
			for _, e := range rec.all() {
				if e.Reason == sb.ReasonDropped {
					drops = append(drops, e.Error)
				}
			}
			if len(drops) != 1 || drops[0] == nil || drops[0].Phase != sb.PhaseRuntime || drops[0].Code != sb.CodeConnectionClosed ||
				!strings.Contains(drops[0].Message, "invalid character") {
				t.Fatalf("drops %+v, want one in phase runtime, code connection_closed, naming the JSON error", drops)
			}
		})
	})
}

func TestSSEStreamOutlivesTheConnectDeadline(t *testing.T) {
	// The legacy SSE client ties its stream to the context given to
	// Connect; the session must give it one that lives as long as the link,
	// not the attempt's deadline.
	srv := testserver.StartHTTP(t)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportSSE, URL: srv.BaseURL + "/sse", StartupTimeoutMS: 500}
	s, _ := newSession(t, cfg, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // twice the startup timeout
	cs, err := s.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("call after the connect deadline: %v", err)
	}
	if info := s.Info(); info.Status != sb.StatusConnected || info.Reconnects != 0 {
		t.Fatalf("the SSE session did not survive: %+v", info)
	}
}

// switchProxy is a loopback reverse proxy in front of a test server that
// can be told to answer every request with an HTTP status instead.
type switchProxy struct {
	srv     *httptest.Server
	status  atomic.Int32
	refused atomic.Int32 // requests answered with status
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream SSE through at once
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := p.status.Load(); st != 0 {
			p.refused.Add(1)
			http.Error(w, http.StatusText(int(st)), int(st))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func TestHealthProbeTells429And401FromDown(t *testing.T) {
	srv := testserver.StartHTTP(t)
	proxy := newSwitchProxy(t, srv.BaseURL)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: proxy.srv.URL + "/mcp"}
	s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: 50 * time.Millisecond, ProbeTimeout: time.Second})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	// 429: a live server asking us to slow down. Not down.
	proxy.status.Store(429)
	time.Sleep(500 * time.Millisecond) // about ten probes
	proxy.status.Store(0)
	if info := s.Info(); info.Status != sb.StatusConnected || info.Reconnects != 0 || rec.count(sb.ReasonDropped) != 0 {
		t.Fatalf("after HTTP 429 probes: %+v; a live server was taken for down", info)
	}

	// 401: the credentials stopped working. The go-sdk closes the session
	// on it; the session must say auth, not "down", and must not retry
	// into the 401 until someone changes the config or restarts it.
	proxy.status.Store(401)
	info := waitFor(t, s, "the auth error", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusError })
	if info.Error.Phase != sb.PhaseAuth || info.Error.Code != "http_401" || info.NextRetryAt != nil {
		t.Fatalf("after HTTP 401: %+v %+v", info, info.Error)
	}
	time.Sleep(300 * time.Millisecond)
	if n := rec.count(sb.ReasonStarting); n != 2 {
		t.Fatalf("%d attempts (initial + one reconnect expected): retrying into a 401", n)
	}
	for _, e := range rec.all() {
		if e.Error != nil && e.Error.Code == "probe_timeout" {
			t.Fatalf("a 401 was reported as a probe timeout: %+v", e.Error)
		}
	}

	// Credentials fixed, restart: connected again.
	proxy.status.Store(0)
	s.Restart()
	waitFor(t, s, "the restart", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
}

func TestDisconnectClearsTheCatalog(t *testing.T) {
	var s *upstream.Session
	counts := make(chan [3]int, 10)
	opts := &upstream.Options{OnEvent: func(e sb.Event) {
		if e.Reason == sb.ReasonDropped {
			i := s.Info()
			counts <- [3]int{i.ToolCount, i.ResourceCount, i.PromptCount}
		}
	}}
	s = upstream.New(stdioConfig(t), opts)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tools, _, _, _ := s.Catalog(); len(tools) == 0 {
		t.Fatal("no tools while connected")
	}
	syscall.Kill(s.Info().PID, syscall.SIGKILL)
	select {
	case c := <-counts:
		if c != [3]int{} {
			t.Fatalf("tools, resources, prompts after the drop = %v, want none", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no drop event")
	}
}

func TestSecretsAreRemovedFromErrors(t *testing.T) {
	srv := testserver.StartHTTP(t, "-status", "401")
	u := strings.Replace(srv.URL, "http://", "http://alice:pa55word@", 1) + "?api_key=k3y-value&x=1"
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: u,
		Headers: map[string]string{"X-Token": "header-secret-value"}}
	s, rec := newSession(t, cfg, nil)
	err := s.Start(context.Background())
	if err == nil {
		t.Fatal("connected through a 401")
	}
	text := fmt.Sprint(err, s.Info().Error, rec.all())
	for _, secret := range []string{"pa55word", "k3y-value", "header-secret-value"} {
		if strings.Contains(text, secret) {
			t.Errorf("secret %q leaked: %s", secret, text)
		}
	}
	if !strings.Contains(text, "http://***@127.0.0.1") || !strings.Contains(text, "api_key=***") {
		t.Errorf("the URL was not kept recognisable: %s", text)
	}
}
