package upstream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// These tests put the go-sdk's own handlers (mcp.NewSSEHandler,
// mcp.NewStreamableHTTPHandler) on loopback, wrapped by small handlers that
// answer some requests the way a real server, a proxy or a web page would.
// Nothing here writes an MCP message by hand: what the session sees of MCP
// is what the SDK's servers send.

// inProcessServer returns the test server's MCP server, to be served by the
// SDK's HTTP handlers inside the test process.
func inProcessServer(t *testing.T) *mcp.Server {
	t.Helper()
	srv, err := testserver.NewInProcess(testserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A session the client abandoned (the one a balancer lost) is never
	// closed by the SDK's handlers: close them all, or they outlive the test.
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return srv
}

// legacySSE returns the SDK's legacy SSE handler (2024-11-05) for srv.
func legacySSE(srv *mcp.Server) *mcp.SSEHandler {
	return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// isLegacyPost reports whether r is a message POST of a legacy SSE session:
// the SSE handler's endpoint event points back at the same URL with a
// sessionid query parameter.
func isLegacyPost(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Query().Get("sessionid") != ""
}

// isSSEOpen reports whether r is a legacy SSE client opening its stream: a
// GET without the Streamable HTTP session header (a Streamable HTTP client
// only sends a GET after initialize, with the header).
func isSSEOpen(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Mcp-Session-Id") == ""
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// logRecorder keeps the messages a session logs, and shows them in the
// test's output too.
type logRecorder struct {
	slog.Handler
	mu   *sync.Mutex
	msgs *[]string
}

func newLogRecorder(t *testing.T) logRecorder {
	return logRecorder{
		Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}),
		mu:      &sync.Mutex{},
		msgs:    &[]string{},
	}
}

func (h logRecorder) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.msgs = append(*h.msgs, r.Message)
	h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return logRecorder{h.Handler.WithAttrs(as), h.mu, h.msgs}
}

func (h logRecorder) WithGroup(name string) slog.Handler {
	return logRecorder{h.Handler.WithGroup(name), h.mu, h.msgs}
}

func (h logRecorder) contains(sub string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(*h.msgs, func(m string) bool { return strings.Contains(m, sub) })
}

// TestFallbackToSSEOn400_404_405AndSessionMissing: a server that only
// speaks the 2024-11-05 transport answers a Streamable HTTP client's first
// POST with 400, 404 or 405 (or, behind a balancer whose replicas share no
// sessions, loses the session during the handshake). A "remote" server must
// then connect over SSE, list the tools and call one.
func TestFallbackToSSEOn400_404_405AndSessionMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// protocol pins the session's protocol version; empty is automatic.
		protocol string
		// handler is what serves the URL, given the SDK's SSE handler and
		// the MCP server behind it.
		handler func(t *testing.T, sse http.Handler, srv *mcp.Server) http.HandlerFunc
	}{
		{
			// The SDK's SSE handler answers a POST without sessionid with
			// 400 "sessionid must be provided" all by itself.
			name: "400 from the SSE handler itself",
			handler: func(_ *testing.T, sse http.Handler, _ *mcp.Server) http.HandlerFunc {
				return sse.ServeHTTP
			},
		},
		{
			name: "404 for a POST without sessionid",
			handler: func(_ *testing.T, sse http.Handler, _ *mcp.Server) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && !isLegacyPost(r) {
						http.NotFound(w, r)
						return
					}
					sse.ServeHTTP(w, r)
				}
			},
		},
		{
			name: "405 for a POST without sessionid",
			handler: func(_ *testing.T, sse http.Handler, _ *mcp.Server) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && !isLegacyPost(r) {
						w.Header().Set("Allow", "GET")
						http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
						return
					}
					sse.ServeHTTP(w, r)
				}
			},
		},
		{
			// A balancer sends initialize to one Streamable HTTP replica and
			// the next request, carrying the session id, to another that
			// never saw it: the SDK's own "session not found" 404, which its
			// client reports as mcp.ErrSessionMissing. The classic handshake
			// is pinned: the automatic server/discover probe would connect
			// statelessly, with no session to lose.
			name:     "session missing during the Streamable HTTP handshake",
			protocol: "2025-11-25",
			handler: func(t *testing.T, sse http.Handler, srv *mcp.Server) http.HandlerFunc {
				get := func(*http.Request) *mcp.Server { return srv }
				first := mcp.NewStreamableHTTPHandler(get, nil)
				other := mcp.NewStreamableHTTPHandler(get, nil)
				var lost atomic.Bool
				t.Cleanup(func() {
					if !lost.Load() {
						t.Error("no request reached the replica without the session: the session-missing path was not taken")
					}
				})
				return func(w http.ResponseWriter, r *http.Request) {
					switch {
					case isSSEOpen(r), isLegacyPost(r):
						sse.ServeHTTP(w, r)
					case r.Header.Get("Mcp-Session-Id") != "":
						lost.Store(true)
						other.ServeHTTP(w, r)
					default:
						first.ServeHTTP(w, r)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := inProcessServer(t)
			ts := serve(t, tc.handler(t, legacySSE(srv), srv))
			cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportRemote, URL: ts.URL + "/mcp",
				ProtocolVersion: tc.protocol, Retry: &sb.RetryConfig{MaxAttempts: 1}}
			s, _ := newSession(t, cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatalf("Start: %v; want a connection over legacy SSE", err)
			}
			info := s.Info()
			if info.Transport != sb.TransportSSE {
				t.Fatalf("connected over %q, want sse", info.Transport)
			}
			if !slices.Contains(toolNames(info), "echo") {
				t.Fatalf("tools %v, want echo among them", toolNames(info))
			}
			cs, err := s.Client(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("echo over the fallback: %v %+v", err, res)
			}
		})
	}
}

// TestNoFallbackWhenSSECannotHelp: credentials refused, rate
// limiting, a server error, nothing listening or no answer at all say
// nothing about which transport the server speaks; trying SSE would only
// hide the real failure behind a second one.
func TestNoFallbackWhenSSECannotHelp(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/mcp"
	}
	for _, tc := range []struct {
		name     string
		post     func(w http.ResponseWriter, r *http.Request) // nil: no server at all
		timeout  int64                                        // startup timeout, ms; 0 is the default
		wantCode sb.Code
	}{
		{name: "401", post: status(http.StatusUnauthorized), wantCode: "http_401"},
		{name: "403", post: status(http.StatusForbidden), wantCode: "http_403"},
		{name: "429", post: status(http.StatusTooManyRequests), wantCode: "http_429"},
		{name: "500", post: status(http.StatusInternalServerError), wantCode: "http_500"},
		// Web pages with these statuses are about credentials or the server
		// behind a proxy, not about the URL: the status says more.
		{name: "401 as an HTML login page", post: htmlPage(http.StatusUnauthorized), wantCode: "http_401"},
		{name: "502 as a proxy's HTML error page", post: htmlPage(http.StatusBadGateway), wantCode: "http_502"},
		{name: "connection refused", wantCode: sb.CodeConnectionRefused},
		{name: "timeout", timeout: 500, wantCode: sb.CodeTimeout,
			post: func(w http.ResponseWriter, r *http.Request) {
				// net/http notices that the client went away only once the
				// body has been read.
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sseOpened atomic.Bool
			url := ""
			if tc.post == nil {
				url = refused(t)
			} else {
				sse := legacySSE(inProcessServer(t))
				ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
					switch {
					case isSSEOpen(r):
						sseOpened.Store(true)
						sse.ServeHTTP(w, r)
					case isLegacyPost(r):
						sse.ServeHTTP(w, r)
					default:
						tc.post(w, r)
					}
				})
				url = ts.URL + "/mcp"
			}
			logs := newLogRecorder(t)
			cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportRemote, URL: url,
				StartupTimeoutMS: tc.timeout, Retry: &sb.RetryConfig{MaxAttempts: 1}}
			s := upstream.New(cfg, &upstream.Options{Logger: slog.New(logs)})
			t.Cleanup(func() { s.Shutdown(context.Background()) })
			s.Start(context.Background()) // may return at the startup timeout, before the attempt fails
			info := waitFor(t, s, "the failed attempt", func(i sb.RuntimeInfo) bool {
				return i.Error != nil || i.Status == sb.StatusConnected
			})
			if sseOpened.Load() || logs.contains("falling back") || info.Status == sb.StatusConnected {
				t.Fatalf("fell back to SSE after %s (status %s over %q, error %+v): %s says nothing about the transport",
					tc.name, info.Status, info.Transport, info.Error, tc.name)
			}
			if info.Error.Code != tc.wantCode || strings.Contains(info.Error.Message, "HTML") {
				t.Errorf("error %+v, want code %s and the Streamable HTTP failure itself", info.Error, tc.wantCode)
			}
		})
	}
}

// status answers with code and a plain-text body, as http.Error does.
func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		http.Error(w, http.StatusText(code), code)
	}
}

// htmlPage answers with a web page and code, as a web server, a static site
// or a single-page app does for a URL that is not an MCP endpoint.
func htmlPage(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body><h1>It works!</h1></body></html>\n"))
	}
}

// TestHTMLPageIsNotMistakenForABrokenServer: a URL that is a web page (the
// site's home page, its 404 page) must say so, not "the server closed the
// connection" or "malformed line in SSE stream", and be retried like any
// other failure to connect.
func TestHTMLPageIsNotMistakenForABrokenServer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport sb.Transport
		protocol  string // pinned protocol version; empty is automatic
		handler   http.HandlerFunc
		wantCode  sb.Code
		wantBoth  bool // a "remote" server must have tried SSE as well
	}{
		{name: "remote, 200 text/html", transport: sb.TransportRemote, handler: htmlPage(200),
			wantCode: sb.CodeConnectFailed, wantBoth: true},
		{name: "remote, 404 text/html", transport: sb.TransportRemote, handler: htmlPage(404),
			wantCode: "http_404", wantBoth: true},
		{name: "remote, 405 to the POST and 200 text/html to the SSE GET", transport: sb.TransportRemote,
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					status(http.StatusMethodNotAllowed)(w, r)
					return
				}
				htmlPage(200)(w, r)
			},
			wantCode: sb.CodeConnectFailed, wantBoth: true},
		{name: "streamable-http, 200 text/html", transport: sb.TransportStreamableHTTP, handler: htmlPage(200),
			wantCode: sb.CodeConnectFailed},
		{name: "streamable-http, 200 text/html to initialize", transport: sb.TransportStreamableHTTP,
			protocol: "2025-11-25", handler: htmlPage(200), wantCode: sb.CodeConnectFailed},
		{name: "streamable-http, 404 text/html", transport: sb.TransportStreamableHTTP, handler: htmlPage(404),
			wantCode: "http_404"},
		{name: "sse, 200 text/html", transport: sb.TransportSSE, handler: htmlPage(200),
			wantCode: sb.CodeConnectFailed},
		{name: "sse, 404 text/html", transport: sb.TransportSSE, handler: htmlPage(404),
			wantCode: "http_404"},
		// A status that refuses one message (a POST over a body limit),
		// which the client fails alone: the page is seen all the same.
		{name: "streamable-http, 413 text/html", transport: sb.TransportStreamableHTTP, handler: htmlPage(413),
			wantCode: "http_413"},
		{name: "sse, 413 text/html", transport: sb.TransportSSE, handler: htmlPage(413),
			wantCode: "http_413"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sseOpened atomic.Bool
			ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if isSSEOpen(r) {
					sseOpened.Store(true)
				}
				tc.handler(w, r)
			})
			// Credentials in the URL must not reach the message.
			u := strings.Replace(ts.URL, "http://", "http://alice:pa55word@", 1) + "/welcome?api_key=k3y-value"
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: u, ProtocolVersion: tc.protocol,
				Retry: &sb.RetryConfig{MaxAttempts: 2, DelaysMS: []int64{10}}}
			s, rec := newSession(t, cfg, nil)
			err := s.Start(context.Background())
			var uerr *upstream.Error
			if !errors.As(err, &uerr) {
				t.Fatalf("Start = %v, want a session error", err)
			}
			const want = "answered with an HTML page, not MCP: is this the server's MCP endpoint? (it usually ends in /mcp or /sse)"
			if uerr.Phase != sb.PhaseConnect || uerr.Code != tc.wantCode || !strings.Contains(uerr.Message, want) ||
				!strings.Contains(uerr.Message, "/welcome") {
				t.Fatalf("error phase %s code %s %q; want phase connect, code %s, naming the URL and saying %q",
					uerr.Phase, uerr.Code, uerr.Message, tc.wantCode, want)
			}
			for _, secret := range []string{"pa55word", "k3y-value"} {
				if strings.Contains(uerr.Message, secret) {
					t.Errorf("secret %q leaked: %q", secret, uerr.Message)
				}
			}
			if tc.wantBoth && !sseOpened.Load() {
				t.Errorf("a remote server gave up without trying SSE")
			}
			// Retried as any other failure to connect (retryFast): both fast
			// attempts spent, then the slow retry is scheduled. An auth-like
			// failure would stop after one attempt with no retry due.
			info := s.Info()
			if n := rec.count(sb.ReasonStarting); n != 2 || info.Attempt != 2 || info.NextRetryAt == nil {
				t.Errorf("%d attempts, attempt %d, next retry %v; want 2, 2 and a slow retry due", n, info.Attempt, info.NextRetryAt)
			}
		})
	}
}
