package upstream_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestServerEndingTheSessionIsNoticed: a server that ends an idle session
// on its own (it forgets it, closing its streams) is noticed without a
// call or a health probe, over Streamable HTTP (the session is missing:
// expired) and legacy SSE (the stream closed). The stdio counterpart, a
// process that exits, is TestReconnectAfterProcessKilled.
func TestServerEndingTheSessionIsNoticed(t *testing.T) {
	for _, tc := range []struct {
		transport sb.Transport
		path      string
		code      sb.Code
	}{
		{sb.TransportStreamableHTTP, "/mcp", sb.CodeSessionExpired},
		{sb.TransportSSE, "/sse", sb.CodeConnectionClosed},
	} {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: srv.BaseURL + tc.path}
			s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			adminPost(t, srv, "drop")
			drop := waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonDropped })
			if drop.Error == nil || drop.Error.Code != tc.code || drop.Error.Phase != sb.PhaseRuntime {
				t.Fatalf("dropped with %+v, want %s in phase runtime", drop.Error, tc.code)
			}
			waitFor(t, s, "the reconnect", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.Reconnects == 1 })
		})
	}
}

// TestListChangedArrivesOnTheStream: a server's list_changed that answers
// no request of the session (another client added a tool) reaches the
// session on its event stream, over Streamable HTTP (the standalone
// stream) and legacy SSE.
func TestListChangedArrivesOnTheStream(t *testing.T) {
	for _, tc := range []struct {
		transport sb.Transport
		path      string
	}{
		{sb.TransportStreamableHTTP, "/mcp"},
		{sb.TransportSSE, "/sse"},
	} {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: srv.BaseURL + tc.path}
			s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			other, err := mcp.NewClient(&mcp.Implementation{Name: "other"}, nil).
				Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "brand_new"}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, s, "the new tool", func(i sb.RuntimeInfo) bool { return slices.Contains(toolNames(i), "brand_new") })
			if rec.count(sb.ReasonToolsChanged) == 0 {
				t.Error("no tools_changed event")
			}
		})
	}
}

// TestIdleRemoteSessionGoroutines: an idle remote session runs no more
// goroutines than it needs: its lifecycle, the go-sdk's JSON-RPC reader
// and the reader of its event stream. No goroutine waits on the
// connection for its end (dialHTTP), and the stream's connection has no
// net/http loops (streamconn.go). Thousands of idle remote servers each kept three more,
// 4 KiB of stack apiece.
func TestIdleRemoteSessionGoroutines(t *testing.T) {
	const sessions = 20
	for _, tc := range []struct {
		transport sb.Transport
		path      string
		each      int
	}{
		{sb.TransportStreamableHTTP, "/mcp", 3},
		{sb.TransportSSE, "/sse", 3},
	} {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			before := runtime.NumGoroutine()
			for i := range sessions {
				cfg := &sb.ServerConfig{Name: fmt.Sprint("s", i), Transport: tc.transport, URL: srv.BaseURL + tc.path}
				s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
				if err := s.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// Beyond the sessions' own: the connections the requests of the
			// handshakes left idle in the pool (two goroutines each), and
			// goroutines on their way out.
			const slack = 10
			deadline := time.Now().Add(5 * time.Second)
			for {
				n := runtime.NumGoroutine() - before
				if n <= sessions*tc.each+slack {
					t.Logf("%d goroutines for %d idle sessions", n, sessions)
					return
				}
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines for %d idle sessions, want at most %d each (and %d more):\n%s",
						n, sessions, tc.each, slack, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
