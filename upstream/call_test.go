package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func slowArgs(durationMS, intervalMS int) map[string]any {
	return map[string]any{"duration_ms": durationMS, "interval_ms": intervalMS}
}

func TestProgressResetsTheRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		var got []sb.Progress
		start := time.Now()
		res, err := s.CallTool(context.Background(), "slow", slowArgs(5000, 1000), sb.InvokeOptions{
			Timeout:                1500 * time.Millisecond,
			ResetTimeoutOnProgress: true,
			OnProgress:             func(p sb.Progress) { got = append(got, p) },
		})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("took %v, want 5s", d)
		}
		if txt := res.MustDecode().Content[0].(*mcp.TextContent).Text; txt != "done after 5000ms" {
			t.Errorf("result %q", txt)
		}
		if len(got) != 5 || got[0].Progress != 1 || got[4].Progress != 5 || got[4].Total != 5 {
			t.Errorf("progress %+v, want 1..5 of 5", got)
		}
	})
}

func TestWithoutResetTheRequestTimeoutFires(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{EventsFile: events})
		start := time.Now()
		_, err := s.CallTool(context.Background(), "slow", slowArgs(5000, 1000), sb.InvokeOptions{
			Timeout:    1500 * time.Millisecond,
			OnProgress: func(sb.Progress) {},
		})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, upstream.ErrTimeout) || te.Limit != upstream.LimitRequest {
			t.Fatalf("err = %v, want a request timeout", err)
		}
		if d := time.Since(start); d != 1500*time.Millisecond || te.Elapsed != d {
			t.Errorf("timed out after %v (error says %v), want 1.5s", d, te.Elapsed)
		}
		if te.LastProgress == nil || te.LastProgress.Progress != 1 {
			t.Errorf("last progress %+v, want step 1", te.LastProgress)
		}
		if !strings.Contains(err.Error(), "request timeout of 1.5s") || !strings.Contains(err.Error(), "step 1/5") {
			t.Errorf("message %q does not say which limit fired and the last progress", err)
		}
		synctest.Wait() // let notifications/cancelled reach the server
		if !hasEvent(t, events, "cancelled", "slow") {
			t.Error("the server never saw the cancellation")
		}
		// The session stays usable.
		if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil {
			t.Fatalf("call after the timeout: %v", err)
		}
	})
}

func TestMaxTotalTimeoutCapsProgressExtendedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		start := time.Now()
		n := 0
		_, err := s.CallTool(context.Background(), "slow", slowArgs(5000, 1000), sb.InvokeOptions{
			Timeout:                1500 * time.Millisecond,
			MaxTotalTimeout:        3 * time.Second,
			ResetTimeoutOnProgress: true,
			OnProgress:             func(sb.Progress) { n++ },
		})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || te.Limit != upstream.LimitTotal || te.Timeout != 3*time.Second {
			t.Fatalf("err = %v, want the total cap", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("capped after %v, want 3s", d)
		}
		if n < 2 {
			t.Errorf("%d progress notifications before the cap; progress kept coming", n)
		}
	})
}

func TestMaxTotalTimeoutFiresWithoutProgress(t *testing.T) {
	// The TypeScript SDK checks the total cap only when progress arrives; a
	// silent tool must be capped by a real timer.
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		start := time.Now()
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{
			Timeout: time.Hour, MaxTotalTimeout: 2 * time.Second,
		})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || te.Limit != upstream.LimitTotal || time.Since(start) != 2*time.Second {
			t.Fatalf("err = %v after %v, want the total cap at 2s", err, time.Since(start))
		}
	})
}

func TestConcurrentCallsSeeOnlyTheirOwnProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		var wg sync.WaitGroup
		got := make([][]sb.Progress, 2)
		for i, interval := range []int{100, 300} {
			wg.Go(func() {
				_, err := s.CallTool(context.Background(), "slow", slowArgs(1200, interval), sb.InvokeOptions{
					OnProgress: func(p sb.Progress) { got[i] = append(got[i], p) },
				})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		for i, want := range []int{12, 4} {
			if len(got[i]) != want {
				t.Errorf("call %d got %d notifications, want %d: %+v", i, len(got[i]), want, got[i])
				continue
			}
			for j, p := range got[i] {
				if p.Progress != float64(j+1) || p.Total != float64(want) {
					t.Errorf("call %d notification %d = %+v, want %d/%d (someone else's, or out of order)", i, j, p, j+1, want)
				}
			}
		}
	})
}

func TestElicitationWaitDoesNotCountAgainstTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		start := time.Now()
		res, err := s.CallTool(context.Background(), "elicit", map[string]any{"message": "Deploy?"}, sb.InvokeOptions{
			Timeout: time.Second,
			OnElicitation: func(ctx context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
				if req.Message != "Deploy?" || !bytes.Contains(req.RequestedSchema, []byte(`"answer"`)) {
					t.Errorf("elicitation request %+v", req)
				}
				time.Sleep(3 * time.Second) // a person thinking
				return sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
			},
		})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if txt := res.MustDecode().Content[0].(*mcp.TextContent).Text; txt != "answer: yes" || time.Since(start) != 3*time.Second {
			t.Fatalf("result %q after %v", txt, time.Since(start))
		}
	})
}

func TestElicitationWaitCountsAgainstTheTotalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		start := time.Now()
		_, err := s.CallTool(context.Background(), "elicit", nil, sb.InvokeOptions{
			Timeout:         time.Second,
			MaxTotalTimeout: 2 * time.Second,
			OnElicitation: func(ctx context.Context, _ sb.ElicitationRequest) (sb.ElicitationResponse, error) {
				<-ctx.Done() // the person never answers; the cap must end the wait
				return sb.ElicitationResponse{}, ctx.Err()
			},
		})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || te.Limit != upstream.LimitTotal || time.Since(start) != 2*time.Second {
			t.Fatalf("err = %v after %v, want the total cap at 2s", err, time.Since(start))
		}
	})
}

func TestInvalidOptionsAreRejectedBeforeSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		for _, o := range []sb.InvokeOptions{{Timeout: -time.Second}, {MaxTotalTimeout: 48 * time.Hour}, {Timeout: time.Nanosecond}} {
			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, o)
			if !errors.Is(err, upstream.ErrInvalidOptions) {
				t.Errorf("options %+v: err = %v, want ErrInvalidOptions", o, err)
			}
		}
	})
}

func TestCallerCancellationIsTypedAndReachesTheServer(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{EventsFile: events})
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		_, err := s.CallTool(ctx, "sleep", map[string]any{"ms": 10000}, sb.InvokeOptions{})
		if !errors.Is(err, upstream.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrCancelled wrapping the caller's deadline", err)
		}
		synctest.Wait()
		if !hasEvent(t, events, "cancelled", "sleep") {
			t.Error("the server never saw the cancellation")
		}
	})
}

func hasEvent(t *testing.T, path, event, tool string) bool {
	for _, e := range testserver.ReadEvents(t, path) {
		if e.Event == event && e.Tool == tool {
			return true
		}
	}
	return false
}

// The tests below run the test server as a real process.

func TestTimeoutAgainstARealProcessIsSeenByTheServer(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	s, _ := newSession(t, stdioConfig(t, "-events", events), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 10000}, sb.InvokeOptions{Timeout: 500 * time.Millisecond})
	returned := time.Since(start)
	if !errors.Is(err, upstream.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	seen := testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "cancelled" && e.Tool == "sleep" }, 5*time.Second)
	call := testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "call" && e.Tool == "sleep" }, time.Second)
	t.Logf("timeout 500ms: the call returned after %v; the server saw the cancellation %v after the call reached it",
		returned.Round(time.Millisecond), seen.Time.Sub(call.Time).Round(time.Millisecond))
	// Not before its timeout; how soon after is no unit test's to bound
	// on a busy machine (the error says it was the timeout, not the
	// tool's ten seconds, that ended it; TestWithoutResetTheRequestTimeoutFires
	// pins the instant under synctest).
	if returned < 500*time.Millisecond {
		t.Errorf("a 500ms timeout returned after %v", returned)
	}
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("the session is not usable after a timeout: %v", err)
	}
}

// TestServerKilledMidCallFailsFast: kill -9 of a stdio server fails the
// call in flight with ErrConnectionLost, naming the kill. "Fast" is told by
// cause, not by a clock: the call has a timeout, and it must be the kill
// that ends it (a call that only its timeout ended would return ErrTimeout
// 30 s later), with the exit status the session reaped (a failure that did
// not wait for the link's cause would not name the signal). That no timer
// is waited on is pinned under synctest by
// TestConnectionLostMidCallFailsAtOnce; BenchmarkServerKilledMidCall
// measures the latency.
func TestServerKilledMidCallFailsFast(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	s, _ := newSession(t, stdioConfig(t, "-events", events), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	errc := make(chan error, 1)
	go func() {
		// The tool would sleep for ten minutes; the call's timeout is 30 s.
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 600000}, sb.InvokeOptions{Timeout: 30 * time.Second})
		errc <- err
	}()
	testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "call" && e.Tool == "sleep" }, 10*time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var ce *upstream.CallError
	if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrConnectionLost) || ce.Phase != sb.PhaseRuntime ||
		!strings.Contains(err.Error(), "was killed by SIGKILL") {
		t.Fatalf("err = %v, want ErrConnectionLost in phase runtime naming the kill", err)
	}
}

// TestConnectionLostMidCallFailsAtOnce: a call whose connection drops
// fails at that instant of the fake clock, waiting on no timer (not its
// own timeout, not the grace the session gives a process exit to be
// reaped), with the cause the link recorded.
func TestConnectionLostMidCallFailsAtOnce(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{EventsFile: events})
		s, _ := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		errc := sleepCall(s, time.Hour)
		synctest.Wait()
		if !hasEvent(t, events, "call", "sleep") {
			t.Fatal("the call did not reach the tool")
		}
		droppedAt := time.Now()
		d.conn(1).drop()
		err := <-errc
		if d := time.Since(droppedAt); d != 0 {
			t.Errorf("the call failed %v after its connection dropped, want at once", d)
		}
		var ce *upstream.CallError
		if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrConnectionLost) || ce.Phase != sb.PhaseRuntime ||
			!strings.Contains(err.Error(), "the connection closed") {
			t.Fatalf("err = %v, want ErrConnectionLost in phase runtime with the link's cause", err)
		}
	})
}

// BenchmarkServerKilledMidCall measures how soon after kill -9 of a stdio
// server its call in flight fails: ns/kill-to-error. (ns/op is the whole
// cycle: the call, the kill and the reconnect.)
func BenchmarkServerKilledMidCall(b *testing.B) {
	events := filepath.Join(b.TempDir(), "events")
	cfg := &sb.ServerConfig{Name: "bench", Transport: sb.TransportStdio, Command: testserver.Binary(b),
		Args: []string{"-events", events}, ProtocolVersion: "2025-11-25"}
	s := upstream.New(cfg, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() { s.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for b.Loop() {
		info, err := s.WaitFor(ctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		if err != nil {
			b.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := s.CallTool(ctx, "sleep", map[string]any{"ms": 600000}, sb.InvokeOptions{Timeout: time.Minute})
			errc <- err
		}()
		testserver.WaitEvent(b, events, func(e testserver.Event) bool {
			return e.Event == "call" && e.Tool == "sleep" && e.PID == info.PID
		}, 10*time.Second)
		killed := time.Now()
		syscall.Kill(info.PID, syscall.SIGKILL)
		err = <-errc
		total += time.Since(killed)
		if !errors.Is(err, upstream.ErrConnectionLost) {
			b.Fatalf("err = %v, want ErrConnectionLost", err)
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/kill-to-error")
}

func TestSessionTerminatedUnderConcurrentCallers(t *testing.T) {
	srv := testserver.StartHTTP(t)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL}
	s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	adminPost(t, srv, "drop") // every request on the old session now gets 404
	const callers = 20
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": fmt.Sprint(i)}, sb.InvokeOptions{Timeout: 10 * time.Second})
			if err == nil && res.MustDecode().Content[0].(*mcp.TextContent).Text != fmt.Sprint(i) {
				err = fmt.Errorf("wrong answer %+v", res.MustDecode().Content[0])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if info := s.Info(); info.Reconnects != 1 || rec.count(sb.ReasonDropped) != 1 {
		t.Fatalf("reconnects %d, drops %d; want exactly one", info.Reconnects, rec.count(sb.ReasonDropped))
	}
}

func TestBadArgumentsNeverReachTheServer(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	s, _ := newSession(t, stdioConfig(t, "-events", events), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  any
		field string
	}{
		{map[string]any{"a": 1}, "b"},             // missing
		{map[string]any{"a": "one", "b": 2}, "a"}, // wrong type
		{json.RawMessage(`[1,2]`), ""},            // not an object
		{json.RawMessage(`{"a":`), ""},            // not JSON
	} {
		_, err := s.CallTool(context.Background(), "add", tc.args, sb.InvokeOptions{})
		var ae *upstream.ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, upstream.ErrInvalidArguments) || ae.Field != tc.field {
			t.Errorf("args %v: err = %v (field %q), want an argument error naming %q", tc.args, err, fieldOf(ae), tc.field)
		}
	}
	if res, err := s.CallTool(context.Background(), "add", map[string]any{"a": 1, "b": 2}, sb.InvokeOptions{}); err != nil ||
		res.MustDecode().Content[0].(*mcp.TextContent).Text != "3" {
		t.Fatalf("a good call: %v %+v", err, res)
	}
	calls := 0
	for _, e := range testserver.ReadEvents(t, events) {
		if e.Event == "call" && e.Tool == "add" {
			calls++
		}
	}
	if calls != 1 {
		t.Fatalf("the server saw %d calls of add, want only the good one", calls)
	}
}

func fieldOf(ae *upstream.ArgumentError) string {
	if ae == nil {
		return ""
	}
	return ae.Field
}

func TestUnknownToolSuggestsClosestNames(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := s.CallTool(context.Background(), "ecko", nil, sb.InvokeOptions{})
	var ue *upstream.UnknownToolError
	if !errors.As(err, &ue) || !errors.Is(err, upstream.ErrUnknownTool) || len(ue.Suggestions) == 0 || ue.Suggestions[0] != "echo" {
		t.Fatalf("err = %v, want an unknown-tool error suggesting echo", err)
	}
}

func TestResultsKeepEverything(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(context.Background(), "mixed", nil, sb.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.MustDecode().Content) != 5 {
		t.Fatalf("%d contents, want 5", len(res.MustDecode().Content))
	}
	text, _ := res.MustDecode().Content[0].(*mcp.TextContent)
	img, _ := res.MustDecode().Content[1].(*mcp.ImageContent)
	audio, _ := res.MustDecode().Content[2].(*mcp.AudioContent)
	link, _ := res.MustDecode().Content[3].(*mcp.ResourceLink)
	emb, _ := res.MustDecode().Content[4].(*mcp.EmbeddedResource)
	switch {
	case text == nil || text.Text != "text part":
		t.Errorf("text %+v", res.MustDecode().Content[0])
	case img == nil || !bytes.Equal(img.Data, testserver.MixedImage) || img.MIMEType != "image/png":
		t.Errorf("image %+v", res.MustDecode().Content[1])
	case audio == nil || !bytes.Equal(audio.Data, testserver.MixedAudio):
		t.Errorf("audio %+v", res.MustDecode().Content[2])
	case link == nil || link.URI != "test://hello":
		t.Errorf("resource link %+v", res.MustDecode().Content[3])
	case emb == nil || emb.Resource.Text != "item 7":
		t.Errorf("embedded resource %+v", res.MustDecode().Content[4])
	}
	sc, _ := json.Marshal(res.MustDecode().StructuredContent)
	if string(sc) != `{"answer":42,"items":["a","b"]}` || res.MustDecode().Meta["testserver/trace"] != "abc123" {
		t.Errorf("structured content %s, _meta %v", sc, res.MustDecode().Meta)
	}
}

func TestToolErrorKeepsTheResult(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(context.Background(), "fail", map[string]any{"message": "disk full"}, sb.InvokeOptions{})
	var te *upstream.ToolError
	if !errors.As(err, &te) || !errors.Is(err, upstream.ErrToolError) || res == nil || !res.IsError || te.Result != res ||
		!strings.Contains(err.Error(), "disk full") {
		t.Fatalf("res %+v err %v, want the isError result and a ToolError", res, err)
	}
}

func TestResultSizeCap(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), &upstream.Options{MaxResultBytes: 1000})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(context.Background(), "big", map[string]any{"bytes": 900}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("900 bytes under a 1000-byte cap: %v", err)
	}
	_, err := s.CallTool(context.Background(), "big", map[string]any{"bytes": 5000}, sb.InvokeOptions{})
	if !errors.Is(err, upstream.ErrResultTooLarge) || !strings.Contains(err.Error(), "1000-byte limit") {
		t.Fatalf("err = %v, want ErrResultTooLarge", err)
	}
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("the session is not usable after an oversized result: %v", err)
	}
}

// TestCallToAServerInErrorFailsFast: a call to a session in error fails
// at once with the session's cause. It waits neither for its own timeout
// nor for the session's next (slow) retry, and starts no attempt of its
// own. Under synctest "at once" is exact: no fake time passes.
func TestCallToAServerInErrorFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStdio, Command: "switchboard-no-such-command"}
		s, rec := newSession(t, cfg, nil)
		s.Start(context.Background())
		if info := s.Info(); info.Status != sb.StatusError || info.NextRetryAt == nil {
			t.Fatalf("want a session in error waiting for its slow retry: %+v", info)
		}
		start := time.Now()
		_, err := s.CallTool(context.Background(), "echo", nil, sb.InvokeOptions{Timeout: 10 * time.Second})
		if d := time.Since(start); d != 0 {
			t.Errorf("the call returned after %v, want at once", d)
		}
		var ce *upstream.CallError
		if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrUnavailable) || ce.Phase != sb.PhaseSpawn ||
			!strings.Contains(err.Error(), "command not found") {
			t.Fatalf("err = %v, want unavailable with the spawn cause", err)
		}
		if n := rec.count(sb.ReasonStarting); n != 1 {
			t.Errorf("%d attempts, want 1: the call started one of its own", n)
		}
	})
}

func TestCallWaitsForAConnectingSession(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t, "-startup-delay", "1s"), nil)
	go s.Start(context.Background())
	res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "late"}, sb.InvokeOptions{Timeout: 10 * time.Second})
	if err != nil || res.MustDecode().Content[0].(*mcp.TextContent).Text != "late" {
		t.Fatalf("call during connect: %v", err)
	}
	// A timeout shorter than the connect fails as a request timeout.
	s2, _ := newSession(t, stdioConfig(t, "-startup-delay", "3s"), nil)
	go s2.Start(context.Background())
	_, err = s2.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{Timeout: 300 * time.Millisecond})
	var te *upstream.TimeoutError
	if !errors.As(err, &te) || te.Limit != upstream.LimitRequest {
		t.Fatalf("err = %v, want a request timeout while connecting", err)
	}
}

func TestAmbiguousElicitationIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := inProcess(t, testserver.Options{})
		answer := func(ctx context.Context, _ sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			return sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": "mine"}}, nil
		}
		// A second call that also accepts elicitation is in flight.
		go s.CallTool(context.Background(), "sleep", map[string]any{"ms": 1000}, sb.InvokeOptions{OnElicitation: answer})
		synctest.Wait()
		_, err := s.CallTool(context.Background(), "elicit", nil, sb.InvokeOptions{OnElicitation: answer})
		if err == nil || !strings.Contains(err.Error(), "cannot tell which one") {
			t.Fatalf("err = %v, want the ambiguous elicitation refused", err)
		}
		time.Sleep(2 * time.Second)
	})
}

func TestProgressArrivesInOrderBeforeTheResultOnEveryTransport(t *testing.T) {
	srv := testserver.StartHTTP(t)
	for _, cfg := range []*sb.ServerConfig{
		stdioConfig(t),
		{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL},
		{Name: "test", Transport: sb.TransportSSE, URL: srv.BaseURL + "/sse"},
	} {
		t.Run(string(cfg.Transport), func(t *testing.T) {
			s, _ := newSession(t, cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				var got []float64 // written by the callback, read after return: -race checks the ordering
				_, err := s.CallTool(context.Background(), "slow", slowArgs(100, 10), sb.InvokeOptions{
					OnProgress: func(p sb.Progress) { got = append(got, p.Progress) },
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
					t.Fatalf("progress %v, want 1..10 in order, all before the result", got)
				}
			}
		})
	}
}

func TestCallInFlightWhenTheSessionExpiresIsNotRetried(t *testing.T) {
	// The request reached the server before it forgot the session: the
	// tool may have run, so the call must fail rather than run twice.
	events := filepath.Join(t.TempDir(), "events")
	srv := testserver.StartHTTP(t, "-events", events)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL}
	s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 1000}, sb.InvokeOptions{Timeout: 10 * time.Second})
		errc <- err
	}()
	testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "call" && e.Tool == "sleep" }, 5*time.Second)
	adminPost(t, srv, "drop")
	select {
	case err := <-errc:
		if err == nil || errors.Is(err, upstream.ErrTimeout) {
			t.Fatalf("err = %v, want a failure of the call that was running", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call hangs")
	}
	time.Sleep(300 * time.Millisecond)
	calls := 0
	for _, e := range testserver.ReadEvents(t, events) {
		if e.Event == "call" && e.Tool == "sleep" {
			calls++
		}
	}
	if calls != 1 {
		t.Fatalf("the tool ran %d times, want once", calls)
	}
}

// sleepCall starts a call of the testserver's sleep tool that would run
// for ten minutes, bounded by timeout; its error comes on the channel.
func sleepCall(s *upstream.Session, timeout time.Duration) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 600000}, sb.InvokeOptions{Timeout: timeout})
		errc <- err
	}()
	return errc
}
