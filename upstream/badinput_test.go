package upstream_test

// Bad input from an upstream server, against the real test server over
// stdio and over HTTP: malformed JSON ends every attempt in an error phase
// with a message and the session keeps retrying; an oversized tool result
// is cut off with ErrResultTooLarge and the session stays usable.

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// badInputSession starts nothing: it returns a session whose events are
// collected, shut down (and checked to shut down cleanly) when the test
// ends.
func badInputSession(t *testing.T, cfg *sb.ServerConfig, opts upstream.Options) (*upstream.Session, func() []sb.Event) {
	t.Helper()
	var mu sync.Mutex
	var events []sb.Event
	opts.OnEvent = func(e sb.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := upstream.New(cfg, &opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, func() []sb.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]sb.Event(nil), events...)
	}
}

func waitInfo(t *testing.T, s *upstream.Session, what string, timeout time.Duration, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	info, err := s.WaitFor(ctx, pred)
	if err != nil {
		t.Fatalf("waiting for %s: %v; last info: %+v", what, err, info)
	}
	return info
}

// quickRetry makes the retry cycle short enough to watch several attempts,
// through the fast retries, the error status and the slow retry.
var quickRetry = &sb.RetryConfig{MaxAttempts: 2, DelaysMS: []int64{50}, SlowRetryMS: 200}

func TestMalformedJSONFromUpstreamIsAnErrorNotACrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the config and a count of the connection attempts
		// the server has seen so far.
		setup  func(t *testing.T) (*sb.ServerConfig, func() int)
		phases []sb.Phase // where the malformed message may be met
	}{
		{
			// A line that is not JSON right after the initialize response.
			name: "stdio",
			setup: func(t *testing.T) (*sb.ServerConfig, func() int) {
				events := testserver.EventsFile(t)
				cfg := &sb.ServerConfig{Name: "malformed", Transport: sb.TransportStdio, Command: testserver.Binary(t),
					Args: []string{"-malformed", "-events", events}, ProtocolVersion: "2025-11-25", Retry: quickRetry}
				return cfg, func() int { return countEvents(t, events, "start", "") }
			},
			// PhaseSpawn too: the session closes the server's stdin on the bad
			// line, the server exits, and the exit can be reported instead
			// of the JSON error (see TestMalformedStdioErrorNamesTheJSON).
			phases: []sb.Phase{sb.PhaseInitialize, sb.PhaseDiscover, sb.PhaseRuntime, sb.PhaseSpawn},
		},
		{
			// A tools/list response that is not JSON.
			name: "http",
			setup: func(t *testing.T) (*sb.ServerConfig, func() int) {
				events := testserver.EventsFile(t)
				srv := testserver.StartHTTP(t, "-malformed", "-events", events)
				cfg := &sb.ServerConfig{Name: "malformed", Transport: sb.TransportStreamableHTTP, URL: srv.URL,
					ProtocolVersion: "2025-11-25", Retry: quickRetry}
				return cfg, func() int { return countEvents(t, events, "request", "initialize") }
			},
			phases: []sb.Phase{sb.PhaseDiscover},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, attempts := tc.setup(t)
			s, events := badInputSession(t, cfg, upstream.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s.Start(ctx) // an error, or connected until the bad line arrives

			// The fast retries end in status error, with the phase and a message.
			info := waitInfo(t, s, "status error", 20*time.Second, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusError })
			if info.Error == nil || info.Error.Message == "" || info.Error.Code == "" || !phaseIn(info.Error.Phase, tc.phases) {
				t.Fatalf("error %+v, want a message and a phase in %v", info.Error, tc.phases)
			}
			if info.NextRetryAt == nil {
				t.Errorf("status error without a next retry: %+v", info)
			}
			t.Logf("malformed JSON over %s: phase %s, code %s: %s", tc.name, info.Error.Phase, info.Error.Code, info.Error.Message)

			// The session keeps trying (slow retry), each time failing the
			// same way; it never gives up or stops.
			before := attempts()
			deadline := time.Now().Add(15 * time.Second)
			for attempts() < before+2 {
				if time.Now().After(deadline) {
					t.Fatalf("no further attempts after status error: %d then %d", before, attempts())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if st := s.Info().Status; st == sb.StatusDisabled {
				t.Fatalf("the session stopped itself: %+v", s.Info())
			}
			failed := 0
			for _, e := range events() {
				if e.Reason == sb.ReasonAttemptFailed || e.Reason == sb.ReasonDropped {
					failed++
					if e.Error == nil || e.Error.Message == "" || !phaseIn(e.Error.Phase, tc.phases) {
						t.Errorf("event %+v without a message or phase: %+v", e, e.Error)
					}
				}
			}
			if failed < 3 {
				t.Errorf("%d failure events, want at least 3", failed)
			}

			// A call fails fast, typed, naming the cause.
			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{Timeout: 2 * time.Second})
			if err == nil {
				t.Fatal("a call on a server that sends malformed JSON succeeded")
			}
			if !errors.Is(err, upstream.ErrUnavailable) && !errors.Is(err, upstream.ErrConnectionLost) && !errors.Is(err, upstream.ErrTimeout) {
				t.Errorf("call error %T %v", err, err)
			}

			// End the test while the session waits for its next slow retry,
			// not in the middle of an attempt (see
			// TestShutdownDuringStreamGETIsBounded).
			waitInfo(t, s, "a slow-retry wait", 20*time.Second, func(i sb.RuntimeInfo) bool {
				return i.Status == sb.StatusError && i.NextRetryAt != nil && time.Until(*i.NextRetryAt) > 150*time.Millisecond
			})
		})
	}
}

func phaseIn(p sb.Phase, ps []sb.Phase) bool {
	for _, q := range ps {
		if p == q {
			return true
		}
	}
	return false
}

// countEvents counts the test server's events of a kind (and method).
func countEvents(t *testing.T, path, kind, method string) int {
	n := 0
	for _, e := range testserver.ReadEvents(t, path) {
		if e.Event == kind && (method == "" || e.Method == method) {
			n++
		}
	}
	return n
}

func TestOversizedResultIsCutOffAndTheSessionStaysUsable(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) *sb.ServerConfig
	}{
		{"stdio", func(t *testing.T) *sb.ServerConfig {
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportStdio, Command: testserver.Binary(t), ProtocolVersion: "2025-11-25"}
		}},
		{"streamable-http", func(t *testing.T) *sb.ServerConfig {
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportStreamableHTTP, URL: testserver.StartHTTP(t).URL}
		}},
		{"sse", func(t *testing.T) *sb.ServerConfig {
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportSSE, URL: testserver.StartHTTP(t).BaseURL + "/sse"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, events := badInputSession(t, tc.cfg(t), upstream.Options{MaxResultBytes: limit})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := s.Info()
			call := func(bytes int) error {
				_, err := s.CallTool(context.Background(), "big", map[string]any{"bytes": bytes}, sb.InvokeOptions{Timeout: 10 * time.Second})
				return err
			}
			if err := call(limit); err != nil {
				t.Fatalf("a result of exactly the limit: %v", err)
			}
			for _, n := range []int{limit + 1, 50_000} {
				err := call(n)
				var ce *upstream.CallError
				if !errors.Is(err, upstream.ErrResultTooLarge) || !errors.As(err, &ce) || ce.Phase != sb.PhaseToolCall ||
					!strings.Contains(err.Error(), "1000-byte limit") || !strings.Contains(err.Error(), "big/big") {
					t.Fatalf("a result of %d bytes: %T %v, want ErrResultTooLarge in phase tool_call naming the limit", n, err, err)
				}
				if strings.Contains(err.Error(), "xxxxxxxxxx") {
					t.Fatalf("the error carries the payload: %.200s", err)
				}
				res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "after"}, sb.InvokeOptions{Timeout: 10 * time.Second})
				if err != nil || res == nil {
					t.Fatalf("the session is not usable after a %d-byte result: %v", n, err)
				}
			}
			after := s.Info()
			if after.Status != sb.StatusConnected || after.Reconnects != before.Reconnects || (before.PID != 0 && after.PID != before.PID) {
				t.Fatalf("an oversized result disturbed the session: %+v -> %+v", before, after)
			}
			for _, e := range events() {
				if e.Reason == sb.ReasonDropped || e.Reason == sb.ReasonAttemptFailed {
					t.Errorf("event %+v after an oversized result", e)
				}
			}
		})
	}
}

// TestOversizedStdioFrameIsCutOff: over stdio the result cap also bounds
// one JSON-RPC line (MaxResultBytes plus 1 MiB of envelope), so a server
// cannot make Switchboard buffer an arbitrarily long line. A result past
// that bound fails the call (the line cannot be read, so the connection is
// given up), and the session reconnects by itself and is usable again.
func TestOversizedStdioFrameIsCutOff(t *testing.T) {
	s, err := oversizedFrame(t)
	t.Logf("a line over the frame bound: %T %v", err, err)
	if !errors.Is(err, upstream.ErrResultTooLarge) && !errors.Is(err, upstream.ErrConnectionLost) {
		t.Errorf("error %T %v, want ErrResultTooLarge or ErrConnectionLost", err, err)
	}
	waitInfo(t, s, "the reconnect", 20*time.Second, func(i sb.RuntimeInfo) bool {
		return i.Status == sb.StatusConnected && i.Reconnects >= 1
	})
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "after"}, sb.InvokeOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("the session is not usable after an oversized frame: %v", err)
	}
}

// TestOversizedStdioFrameSaysTooLarge: the call whose result overflowed
// the frame bound fails with ErrResultTooLarge naming the limit, like a
// result just over the cap, not as a lost connection blaming the server
// ("killed by signal broken pipe": Switchboard closed the pipe).
func TestOversizedStdioFrameSaysTooLarge(t *testing.T) {
	_, err := oversizedFrame(t)
	if !errors.Is(err, upstream.ErrResultTooLarge) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("error %T %v, want ErrResultTooLarge naming the limit", err, err)
	}
}

// oversizedFrame calls big for a result 2 MiB over a 1000-byte cap over
// stdio and returns the session and the call's error.
func oversizedFrame(t *testing.T) (*upstream.Session, error) {
	const limit = 1000
	cfg := &sb.ServerConfig{Name: "frame", Transport: sb.TransportStdio, Command: testserver.Binary(t), ProtocolVersion: "2025-11-25",
		Retry: &sb.RetryConfig{DelaysMS: []int64{50}}}
	s, _ := badInputSession(t, cfg, upstream.Options{MaxResultBytes: limit})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := s.CallTool(context.Background(), "big", map[string]any{"bytes": limit + 2<<20}, sb.InvokeOptions{Timeout: 10 * time.Second})
	if err == nil {
		t.Fatal("a 2 MiB line under a 1000-byte cap was read")
	}
	if strings.Contains(err.Error(), "xxxxxxxxxx") {
		t.Fatalf("the error carries the payload: %.200s", err)
	}
	return s, err
}

// TestMalformedStdioErrorNamesTheJSON: when a stdio server writes a line
// that is not JSON, the error says so. The session closes the server's
// stdin on that line and the server exits; that exit, which Switchboard
// caused, must not be reported instead ("exited with status 0 before
// completing the MCP handshake", phase spawn), which sends the reader
// looking for a crash that did not happen.
//
// The bad line follows the initialize response, and what the session meets
// it in is a race inside the go-sdk: Connect sends notifications/initialized
// while the read loop goes on to the bad line. Usually the read loop wins
// and the handshake fails. About one run in four, the handshake completes
// and the first listing fails instead; if that listing was sent after the
// bad line was read (about one run in a hundred), the go-sdk reports
// ErrConnectionClosed, which describe words as "the server closed the
// connection", and the JSON error is lost. That last message is wrong (the
// server closed nothing), but it is what the session says today, so it is
// accepted here, exactly, and nothing else is.
func TestMalformedStdioErrorNamesTheJSON(t *testing.T) {
	for i := range 5 {
		cfg := &sb.ServerConfig{Name: "malformed", Transport: sb.TransportStdio, Command: testserver.Binary(t),
			Args: []string{"-malformed"}, ProtocolVersion: "2025-11-25", Retry: &sb.RetryConfig{MaxAttempts: 1, SlowRetryMS: 600000}}
		s, _ := badInputSession(t, cfg, upstream.Options{})
		s.Start(context.Background())
		info := waitInfo(t, s, "status error", 20*time.Second, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusError })
		e := info.Error
		if e == nil {
			t.Fatalf("run %d: status error without an error", i)
		}
		namesJSON := strings.Contains(strings.ToLower(e.Message), "invalid character")
		handshake := e.Phase == sb.PhaseInitialize && e.Code == sb.CodeInitializeFailed && namesJSON
		listing := e.Phase == sb.PhaseDiscover && e.Code == sb.CodeListFailed &&
			(namesJSON || e.Message == "listing tools failed: the server closed the connection")
		if !handshake && !listing {
			t.Errorf("run %d: error %+v, want initialize/initialize_failed or discover/list_failed, naming the JSON error", i, e)
		}
	}
}

// TestShutdownDuringStreamGETIsBounded: Shutdown returns within
// DefaultShutdownTimeout even when it lands while Connect waits for the
// standalone Streamable HTTP stream (the GET the go-sdk sends inside
// Connect). Today the cancelled GET fails at once and the go-sdk retries it
// with its own backoff (1 s growing by 1.5, five times) on a context that
// nothing cancels, so Connect, and with it Shutdown, takes 10 s or more,
// and the session's goroutine outlives Shutdown. Seen first as a 1-in-30
// flake of the malformed-JSON test over HTTP.
func TestShutdownDuringStreamGETIsBounded(t *testing.T) {
	srv := testserver.StartHTTP(t)
	getSeen := make(chan struct{}, 1)
	target, _ := url.Parse(srv.BaseURL)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case getSeen <- struct{}{}:
			default:
			}
			<-r.Context().Done() // a stream that never answers
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		proxy.CloseClientConnections()
		proxy.Close()
	})
	cfg := &sb.ServerConfig{Name: "stall", Transport: sb.TransportStreamableHTTP, URL: proxy.URL + "/mcp", ProtocolVersion: "2025-11-25"}
	s := upstream.New(cfg, &upstream.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	started := make(chan struct{})
	go func() {
		defer close(started)
		s.Start(context.Background())
	}()
	select {
	case <-getSeen:
	case <-time.After(10 * time.Second):
		t.Fatal("Connect sent no stream GET")
	}
	// Shutdown fails if the session has not ended within its own bound
	// (DefaultShutdownTimeout): the stalled GET must not hold it.
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown during the stream GET: %v, want nil", err)
	}
	// Let the lifecycle end before the leak check, however long it takes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	<-started
}
