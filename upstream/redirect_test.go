package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// configuredHeaders are a remote server's secrets: they must reach its own
// origin and no other.
var configuredHeaders = map[string]string{"Authorization": "Bearer sekrit-token", "X-Api-Key": "key-1234"}

// headerLog is a loopback server of another origin that records every
// request it receives, headers and all, and answers 404.
type headerLog struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []http.Header
}

// newHeaderLog listens on 127.0.0.2 (another host than 127.0.0.1, where
// the servers under test listen), or, where only 127.0.0.1 is configured,
// on another port of it: another origin either way.
func newHeaderLog(t *testing.T) *headerLog {
	t.Helper()
	hl := &headerLog{}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	hl.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hl.mu.Lock()
		hl.reqs = append(hl.reqs, r.Header.Clone())
		hl.mu.Unlock()
		http.NotFound(w, r)
	})}}
	hl.Start()
	t.Cleanup(hl.Close)
	return hl
}

// leaked returns the configured headers, with their values, that reached
// the other origin.
func (hl *headerLog) leaked() []string {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	var out []string
	for _, h := range hl.reqs {
		for k, v := range configuredHeaders {
			if h.Get(k) == v {
				out = append(out, k+": "+v)
			}
		}
	}
	return out
}

func (hl *headerLog) count() int {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return len(hl.reqs)
}

// redirectIf answers the requests that when selects with a redirect of
// the given status to target, and passes the rest to next. It reads a
// POST's body (to look at it) and puts it back.
func redirectIf(code int, target string, when func(r *http.Request, body []byte) bool, next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if when(r, body) {
			http.Redirect(w, r, target, code)
			return
		}
		next.ServeHTTP(w, r)
	}
}

// TestConfiguredHeadersNeverFollowARedirectToAnotherOrigin: a remote server
// (or whoever controls its answers) that redirects Switchboard to another
// host must not receive the server's configured headers there: net/http
// copies custom headers to a redirect, and the session's round-tripper
// adds them to every request it sees. A redirect to another origin is
// refused with an error naming where it pointed, on connect and on a
// call, for 301, 302, 307 and 308; the other origin receives nothing.
func TestConfiguredHeadersNeverFollowARedirectToAnotherOrigin(t *testing.T) {
	always := func(*http.Request, []byte) bool { return true }
	onCall := func(r *http.Request, body []byte) bool {
		return r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools/call"`))
	}
	for _, code := range []int{301, 302, 307, 308} {
		t.Run(fmt.Sprintf("%d on connect", code), func(t *testing.T) {
			other := newHeaderLog(t)
			target := other.URL + "/mcp"
			ts := serve(t, redirectIf(code, target, always, http.NotFoundHandler()))
			s, _ := badInputSession(t, &sb.ServerConfig{Name: "redir", Transport: sb.TransportRemote, URL: ts.URL + "/mcp",
				Headers: configuredHeaders, StartupTimeoutMS: 5000, Retry: &sb.RetryConfig{MaxAttempts: 1}}, upstream.Options{})
			err := s.Start(context.Background())
			if leaked := other.leaked(); len(leaked) > 0 {
				t.Fatalf("the other origin received the configured headers %q (%d requests)", leaked, other.count())
			}
			info := s.Info()
			if err == nil || info.Error == nil || info.Error.Code != sb.CodeRedirect || info.Error.Phase != sb.PhaseConnect ||
				!strings.Contains(info.Error.Message, target) {
				t.Fatalf("Start: %v; error %+v; want code %s in phase connect naming %s", err, info.Error, sb.CodeRedirect, target)
			}
			t.Logf("the session: %s", info.Error.Message)
			if n := other.count(); n != 0 {
				t.Errorf("the other origin received %d requests; want none", n)
			}
		})
		t.Run(fmt.Sprintf("%d on a call", code), func(t *testing.T) {
			other := newHeaderLog(t)
			target := other.URL + "/mcp"
			srv := inProcessServer(t)
			ts := serve(t, redirectIf(code, target, onCall, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
			s, _ := badInputSession(t, &sb.ServerConfig{Name: "redir", Transport: sb.TransportStreamableHTTP, URL: ts.URL,
				Headers: configuredHeaders, StartupTimeoutMS: 5000}, upstream.Options{})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{Timeout: 5 * time.Second})
			if leaked := other.leaked(); len(leaked) > 0 {
				t.Fatalf("the other origin received the configured headers %q (%d requests)", leaked, other.count())
			}
			var ce *upstream.CallError
			if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrServerError) ||
				!strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "another origin") {
				t.Fatalf("call: %T %v; want a *CallError (server_error) naming %s as another origin", err, err, target)
			}
			t.Logf("the call: %v", err)
			if n := other.count(); n != 0 {
				t.Errorf("the other origin received %d requests; want none", n)
			}
		})
	}
}

// TestSameOriginRedirectIsFollowedWithTheHeaders: a redirect within the
// server's own origin (a moved path) keeps working, headers included.
func TestSameOriginRedirectIsFollowedWithTheHeaders(t *testing.T) {
	srv := inProcessServer(t)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var withKey, without int
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
			return
		}
		mu.Lock()
		if r.Header.Get("X-Api-Key") == configuredHeaders["X-Api-Key"] {
			withKey++
		} else {
			without++
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "moved", Transport: sb.TransportStreamableHTTP, URL: ts.URL + "/old",
		Headers: configuredHeaders, StartupTimeoutMS: 5000}, upstream.Options{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if withKey == 0 || without != 0 {
		t.Fatalf("after a same-origin redirect: %d requests with the configured header, %d without", withKey, without)
	}
}

// TestSSEEndpointOnAnotherOriginIsRefused: a legacy SSE server names the
// URL that messages are posted to in its first event. One on another
// origin would get every message with the configured headers; it is
// refused before anything is sent there.
func TestSSEEndpointOnAnotherOriginIsRefused(t *testing.T) {
	other := newHeaderLog(t)
	target := other.URL + "/messages"
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", target)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "elsewhere", Transport: sb.TransportSSE, URL: ts.URL + "/sse",
		Headers: configuredHeaders, StartupTimeoutMS: 5000, Retry: &sb.RetryConfig{MaxAttempts: 1}}, upstream.Options{})
	err := s.Start(context.Background())
	if leaked := other.leaked(); len(leaked) > 0 {
		t.Fatalf("the other origin received the configured headers %q", leaked)
	}
	info := s.Info()
	if err == nil || info.Error == nil || info.Error.Code != sb.CodeRedirect || !strings.Contains(info.Error.Message, target) {
		t.Fatalf("Start: %v; error %+v; want code %s naming %s", err, info.Error, sb.CodeRedirect, target)
	}
	if n := other.count(); n != 0 {
		t.Errorf("the other origin received %d requests; want none", n)
	}
}
