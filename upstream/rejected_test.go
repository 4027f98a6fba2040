package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// httpTransports are the remote transports, each with the path the
// testserver serves it on.
var httpTransports = []struct {
	transport sb.Transport
	path      string
}{{sb.TransportStreamableHTTP, "/mcp"}, {sb.TransportSSE, "/sse"}}

// TestTransientStatusAnswerToACall: a tool call over Streamable HTTP or
// SSE whose POST draws HTTP 429, 503, 502 or 500 fails as the server's
// answer naming the status, and whether the call ran, and the next call
// goes through. Such a status refuses one request, not the connection:
// the session stays connected, and a call in flight meanwhile gets its
// result. (The go-sdk's Streamable HTTP client reports it as its own
// JSON-RPC error -32005, "rejected by transport", which is neither an
// answer of the server's nor a lost connection; its legacy SSE client
// took it for a broken connection, which the round-tripper prevents.)
func TestTransientStatusAnswerToACall(t *testing.T) {
	for _, tc := range httpTransports {
		t.Run(string(tc.transport), func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			srv := testserver.StartHTTP(t, "-events", events)
			proxy := newSwitchProxy(t, srv.BaseURL)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: proxy.srv.URL + tc.path}
			// Each SSE drop is a transparent reconnect, never a backoff.
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1, FlapWindow: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			slow := sleepInFlight(t, s, events, 1500)
			wantStatusAnswers(t, s, proxy)
			if err := <-slow; err != nil {
				t.Errorf("the call in flight during the status answers: %v", err)
			}
			if info := s.Info(); info.Status != sb.StatusConnected || info.Reconnects != 0 {
				t.Fatalf("after the status answers: %s with %d reconnects; the connection was fine", info.Status, info.Reconnects)
			}
		})
	}
}

// Health probes answered with a transient status find the server alive,
// on both HTTP transports: the session neither drops nor reconnects (over
// legacy SSE, the go-sdk took the refused ping for a broken connection).
func TestHealthProbesAnsweredWithTransientStatusKeepTheSession(t *testing.T) {
	for _, tc := range httpTransports {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			proxy := newSwitchProxy(t, srv.BaseURL)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: proxy.srv.URL + tc.path}
			s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: 20 * time.Millisecond, ProbeTimeout: 5 * time.Second})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, status := range []int32{429, 503, 500} {
				proxy.refused.Store(0)
				proxy.status.Store(status)
				for i := 0; proxy.refused.Load() < 3; i++ {
					if i == 1000 {
						t.Fatalf("HTTP %d: %d probes in 10 s", status, proxy.refused.Load())
					}
					time.Sleep(10 * time.Millisecond)
				}
				proxy.status.Store(0)
				if info := s.Info(); info.Status != sb.StatusConnected || info.Reconnects != 0 || rec.count(sb.ReasonDropped) != 0 {
					t.Fatalf("after probes answered HTTP %d: %s with %d reconnects; a live server was taken for down", status, info.Status, info.Reconnects)
				}
			}
			wantConnectionKept(t, s)
		})
	}
}

// wantStatusAnswers has proxy answer one call of s's with each transient
// status, and checks what the call says, and that the next call goes
// through.
func wantStatusAnswers(t *testing.T, s *upstream.Session, proxy *switchProxy) {
	t.Helper()
	for _, tc := range []struct {
		status int
		want   string
	}{
		{429, "HTTP 429 Too Many Requests (it is rate limiting); the call did not run"},
		{503, "HTTP 503 Service Unavailable; the call did not run"},
		{502, "HTTP 502 Bad Gateway, usually a proxy's answer; the call may or may not have reached the server"},
		{500, "HTTP 500 Internal Server Error; the call may or may not have run"},
		{413, "HTTP 413 Request Entity Too Large; the call did not run"},
		{422, "HTTP 422 Unprocessable Entity; the call did not run"},
	} {
		proxy.status.Store(int32(tc.status))
		_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{})
		proxy.status.Store(0)
		var ce *upstream.CallError
		var se *upstream.HTTPStatusError
		if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrServerError) || ce.Phase != sb.PhaseToolCall ||
			!errors.As(err, &se) || se.StatusCode != tc.status || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("HTTP %d: err = %v, want ErrServerError in phase tool_call saying %q", tc.status, err, tc.want)
		}
		if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err != nil {
			t.Fatalf("the call after HTTP %d: %v", tc.status, err)
		}
	}
}

// A legacy SSE server that answers the handshake's POSTs with a transient
// status fails the attempt with that status (http_429, say), as a
// Streamable HTTP server does: the refusal the round-tripper makes of it
// still carries the status to the attempt's error.
func TestSSEHandshakeAnsweredWithTransientStatus(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			sse := legacySSE(inProcessServer(t))
			ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if isLegacyPost(r) {
					http.Error(w, http.StatusText(code), code)
					return
				}
				sse.ServeHTTP(w, r)
			})
			cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportSSE, URL: ts.URL + "/sse", Retry: &sb.RetryConfig{MaxAttempts: 1}}
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
			s.Start(context.Background())
			info := waitFor(t, s, "the failed attempt", func(i sb.RuntimeInfo) bool { return i.Error != nil || i.Status == sb.StatusConnected })
			if want := sb.Code("http_" + strconv.Itoa(code)); info.Error == nil || info.Error.Code != want {
				t.Fatalf("status %s, error %+v; want code %s", info.Status, info.Error, want)
			}
		})
	}
}

// A call whose request is over the server's body limit (the go-sdk's own
// servers answer it 413) fails alone, saying it did not run, on every
// HTTP transport: the go-sdk's clients took that answer for a broken
// connection, so one call too large ended the link, every call in flight
// on it, and the calls of everyone else until the reconnect.
func TestCallOverTheServersBodyLimitFailsAlone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport sb.Transport
		path      string
		args      []string
	}{
		{"streamable-http", sb.TransportStreamableHTTP, "/mcp", nil},
		{"streamable-http json", sb.TransportStreamableHTTP, "/mcp", []string{"-json-response"}},
		{"sse", sb.TransportSSE, "/sse", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			srv := testserver.StartHTTP(t, append([]string{"-events", events, "-max-request-body", "65536"}, tc.args...)...)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: srv.BaseURL + tc.path}
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1, FlapWindow: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			slow := sleepInFlight(t, s, events, 1000)

			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": strings.Repeat("x", 100<<10)}, sb.InvokeOptions{})
			var ce *upstream.CallError
			var se *upstream.HTTPStatusError
			want := "the server refused the call with HTTP 413 Request Entity Too Large; the call did not run"
			if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrServerError) || !errors.As(err, &se) || se.StatusCode != 413 ||
				!strings.Contains(err.Error(), want) {
				t.Fatalf("the call over the limit: %v, want ErrServerError saying %q", err, want)
			}
			if err := <-slow; err != nil {
				t.Errorf("the call in flight meanwhile: %v", err)
			}
			wantConnectionKept(t, s)
		})
	}
}

// A Streamable HTTP server that refuses a call with HTTP 400 and a
// JSON-RPC error in the body (as the TypeScript SDK's servers do) is
// reported with that error, by the go-sdk: the round-tripper reads the
// body to find it and gives it back whole. The connection stays up.
func TestStatusRefusalWithJSONRPCErrorKeepsTheServersError(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return inProcessServer(t) }, nil)
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if bytes.Contains(body, []byte("refuse-me")) && json.Unmarshal(body, &req) == nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"text refused"}}`, req.ID)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: ts.URL + "/mcp"}
	s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "refuse-me"}, sb.InvokeOptions{})
	var we *jsonrpc.Error
	if !errors.Is(err, upstream.ErrServerError) || !errors.As(err, &we) || we.Code != -32602 ||
		!strings.Contains(err.Error(), "the server answered with JSON-RPC error -32602: text refused") {
		t.Fatalf("err = %v, want the server's JSON-RPC error -32602", err)
	}
	wantConnectionKept(t, s)
}

// sleepInFlight starts a call of the sleep tool for ms milliseconds on s,
// and returns once the server (writing events) has it; its outcome comes
// on the channel.
func sleepInFlight(t *testing.T, s *upstream.Session, events string, ms int) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": ms}, sb.InvokeOptions{})
		errc <- err
	}()
	testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "call" && ev.Tool == "sleep" }, 10*time.Second)
	return errc
}

// wantConnectionKept checks that s is still on its first connection, and
// that a call goes through on it.
func wantConnectionKept(t *testing.T, s *upstream.Session) {
	t.Helper()
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("the call after: %v", err)
	}
	if info := s.Info(); info.Status != sb.StatusConnected || info.Reconnects != 0 {
		t.Fatalf("%s with %d reconnects; the connection was fine", info.Status, info.Reconnects)
	}
}

// A Streamable HTTP server that has forgotten the session answers HTTP 404
// (spec: "MUST respond to requests containing that session ID with HTTP 404
// Not Found"); the TypeScript SDK's servers put a JSON-RPC error in that
// answer (-32001 "Session not found"). The session is gone all the same: a
// call that drew it never ran, so the session is re-established and the
// call retried. Some servers answer 400 instead (the Python SDK's, with a
// line of text; the TypeScript SDK's examples, with a JSON-RPC error): the
// call fails, it may be the call that was refused, and the session is
// probed at once, found gone and re-established. Here the server forgets
// the session without ending its event stream (a replica that never knew
// it, say), so only the answers to requests can tell.
func TestForgottenSessionIsReestablished(t *testing.T) {
	for _, tc := range []struct {
		name, body  string
		status      int
		transparent bool // the call that finds the session gone is retried on a new one
	}{
		{"404", "", http.StatusNotFound, true},
		{"404 with a JSON-RPC error", `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`, http.StatusNotFound, true},
		{"400", "Bad Request: No valid session ID provided", http.StatusBadRequest, false},
		{"400 with a JSON-RPC error", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`, http.StatusBadRequest, false},
		{"400 with a JSON-RPC error and an id", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":"ID"}`, http.StatusBadRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			target, err := url.Parse(srv.BaseURL)
			if err != nil {
				t.Fatal(err)
			}
			proxy := httputil.NewSingleHostReverseProxy(target)
			proxy.FlushInterval = -1
			var mu sync.Mutex
			var last string
			forgotten := map[string]bool{}
			ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("Mcp-Session-Id")
				mu.Lock()
				gone := forgotten[id]
				if id != "" {
					last = id
				}
				mu.Unlock()
				if !gone {
					proxy.ServeHTTP(w, r)
					return
				}
				body := tc.body
				if strings.Contains(body, `"ID"`) {
					reqBody, _ := io.ReadAll(r.Body)
					var req struct {
						ID json.RawMessage `json:"id"`
					}
					if json.Unmarshal(reqBody, &req) == nil && len(req.ID) > 0 {
						body = strings.Replace(body, `"ID"`, string(req.ID), 1)
					}
				}
				if strings.HasPrefix(body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, body)
			})
			cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: ts.URL + "/mcp"}
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1, FlapWindow: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				forgotten[last] = true
				mu.Unlock()
				_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{})
				if tc.transparent && err != nil {
					t.Fatalf("forgotten %d: the call after the server forgot the session: %v", i, err)
				}
				if !tc.transparent && err == nil {
					t.Fatalf("forgotten %d: the call the server answered %d succeeded", i, tc.status)
				}
				waitFor(t, s, "the session re-established", func(i2 sb.RuntimeInfo) bool {
					return i2.Status == sb.StatusConnected && i2.Reconnects == i+1
				})
			}
		})
	}
}
