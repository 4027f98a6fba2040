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
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// remoteTransports are the remote transports, each with the testserver's
// path for it.
var remoteTransports = []struct {
	transport sb.Transport
	path      string
}{
	{sb.TransportStreamableHTTP, "/mcp"},
	{sb.TransportSSE, "/sse"},
}

// startRemote starts a session named name to srv over transport at path,
// with no health probe, and starts it.
func startRemote(t *testing.T, srv *testserver.Process, name string, transport sb.Transport, path string) (*upstream.Session, *recorder) {
	t.Helper()
	cfg := &sb.ServerConfig{Name: name, Transport: transport, URL: srv.BaseURL + path}
	s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

// TestServerEndingTheSessionIsNoticed: a server that ends an idle session
// on its own (it forgets it, closing its streams) is noticed without a
// call or a health probe, over Streamable HTTP (the session is missing:
// expired) and legacy SSE (the stream closed). The stdio counterpart, a
// process that exits, is TestReconnectAfterProcessKilled.
func TestServerEndingTheSessionIsNoticed(t *testing.T) {
	code := map[sb.Transport]sb.Code{sb.TransportStreamableHTTP: sb.CodeSessionExpired, sb.TransportSSE: sb.CodeConnectionClosed}
	for _, tc := range remoteTransports {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			s, rec := startRemote(t, srv, "test", tc.transport, tc.path)
			adminPost(t, srv, "drop")
			drop := waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonDropped })
			if want := code[tc.transport]; drop.Error == nil || drop.Error.Code != want || drop.Error.Phase != sb.PhaseRuntime {
				t.Fatalf("dropped with %+v, want %s in phase runtime", drop.Error, want)
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
	for _, tc := range remoteTransports {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			s, rec := startRemote(t, srv, "test", tc.transport, tc.path)
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
// net/http loops (egress/streamconn.go). Thousands of idle remote servers each kept three more,
// 4 KiB of stack apiece.
func TestIdleRemoteSessionGoroutines(t *testing.T) {
	const sessions = 20
	const each = 3 // goroutines per idle session
	for _, tc := range remoteTransports {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			before := runtime.NumGoroutine()
			policy := egress.NewPolicy(nil) // one pool for them all, as serve's sessions share
			for i := range sessions {
				cfg := &sb.ServerConfig{Name: fmt.Sprint("s", i), Transport: tc.transport, URL: srv.BaseURL + tc.path}
				s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1, Egress: policy})
				if err := s.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// Beyond the sessions' own: the connections the requests of the
			// handshakes left idle in the policy's pool (two goroutines
			// each), and goroutines on their way out.
			const slack = 10
			deadline := time.Now().Add(5 * time.Second)
			for {
				n := runtime.NumGoroutine() - before
				if n <= sessions*each+slack {
					t.Logf("%d goroutines for %d idle sessions", n, sessions)
					return
				}
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines for %d idle sessions, want at most %d each (and %d more):\n%s",
						n, sessions, each, slack, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
