package upstream_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// transports returns a config per transport for a test server that writes
// its events to a file of its own: a child process for stdio, one HTTP
// process serving both Streamable HTTP and legacy SSE.
func transports(t *testing.T) map[sb.Transport]func(events string) *sb.ServerConfig {
	return map[sb.Transport]func(string) *sb.ServerConfig{
		sb.TransportStdio: func(events string) *sb.ServerConfig {
			return stdioConfig(t, "-events", events)
		},
		sb.TransportStreamableHTTP: func(events string) *sb.ServerConfig {
			srv := testserver.StartHTTP(t, "-events", events)
			return &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"}
		},
		sb.TransportSSE: func(events string) *sb.ServerConfig {
			srv := testserver.StartHTTP(t, "-events", events)
			return &sb.ServerConfig{Name: "test", Transport: sb.TransportSSE, URL: srv.BaseURL + "/sse"}
		},
	}
}

// A call ended by its timeout or by its caller sends notifications/cancelled
// that reaches the server on every transport, and the session survives it:
// no drop, no reconnect, the same server process and session serving the
// next call. Over Streamable HTTP the notification's own POST used to be
// aborted with the call (it carries the call's context values), and over
// SSE that failed write tore the whole session down.
func TestCancellationReachesTheServerOnEveryTransport(t *testing.T) {
	for transport, config := range transports(t) {
		t.Run(string(transport), func(t *testing.T) {
			events := testserver.EventsFile(t)
			s, rec := newSession(t, config(events), nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}

			// A second call in flight on the same session must not be
			// disturbed by the first one's cancellation.
			var wg sync.WaitGroup
			var otherErr error
			wg.Go(func() {
				_, otherErr = s.CallTool(context.Background(), "slow", slowArgs(600, 100), sb.InvokeOptions{})
			})

			_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 10000}, sb.InvokeOptions{Timeout: 300 * time.Millisecond})
			fired := time.Now()
			if !errors.Is(err, upstream.ErrTimeout) {
				t.Fatalf("timed-out call: err = %v, want ErrTimeout", err)
			}
			seen := testserver.WaitEvent(t, events, func(e testserver.Event) bool {
				return e.Event == "notification" && e.Method == "notifications/cancelled"
			}, 10*time.Second)
			t.Logf("%s: the server saw notifications/cancelled %v after the timeout returned", transport, seen.Time.Sub(fired).Round(10*time.Microsecond))
			testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "cancelled" && e.Tool == "sleep" }, 10*time.Second)

			before := time.Now()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				testserver.WaitEvent(t, events, func(e testserver.Event) bool {
					return e.Event == "call" && e.Tool == "sleep" && e.Time.After(before)
				}, 10*time.Second)
				cancel()
			}()
			if _, err := s.CallTool(ctx, "sleep", map[string]any{"ms": 10000}, sb.InvokeOptions{}); !errors.Is(err, upstream.ErrCancelled) {
				t.Fatalf("caller-cancelled call: err = %v, want ErrCancelled", err)
			}
			cancel()
			testserver.WaitEvent(t, events, func(e testserver.Event) bool {
				return e.Event == "cancelled" && e.Tool == "sleep" && e.Time.After(before)
			}, 10*time.Second)
			wg.Wait()
			if otherErr != nil {
				t.Errorf("the concurrent call failed: %v", otherErr)
			}

			if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "still here"}, sb.InvokeOptions{}); err != nil {
				t.Fatalf("the session is not usable after the cancellations: %v", err)
			}
			if n := rec.count(sb.ReasonDropped); n != 0 || s.Info().Reconnects != 0 {
				t.Errorf("%d drops, %d reconnects after a cancellation; want none", n, s.Info().Reconnects)
			}
			inits := 0
			for _, e := range testserver.ReadEvents(t, events) {
				if e.Event == "initialize" {
					inits++
				}
			}
			if inits != 1 {
				t.Errorf("the server was initialized %d times; want one session throughout", inits)
			}
		})
	}
}

// A JSON-RPC error from the server is its answer, not a broken connection:
// ErrServerError with the server's code, its message scrubbed of the
// config's secrets, and the session untouched; on every transport.
func TestJSONRPCErrorIsAServerErrorOnEveryTransport(t *testing.T) {
	const secret = "sekrit-value-123"
	for transport, config := range transports(t) {
		t.Run(string(transport), func(t *testing.T) {
			cfg := config(testserver.EventsFile(t))
			if cfg.IsStdio() {
				cfg.Env = map[string]string{"API_KEY": secret}
			} else {
				cfg.Headers = map[string]string{"X-Api-Key": secret}
			}
			s, rec := newSession(t, cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := s.CallTool(context.Background(), "rpc_error", map[string]any{"code": -32602, "message": "bad key " + secret}, sb.InvokeOptions{})
			var rpc *jsonrpc.Error
			switch {
			case !errors.Is(err, upstream.ErrServerError) || errors.Is(err, upstream.ErrConnectionLost):
				t.Fatalf("err = %v, want ErrServerError", err)
			case sb.CodeOf(err) != sb.CodeServerError:
				t.Fatalf("code %s, want server_error", sb.CodeOf(err))
			case !errors.As(err, &rpc) || rpc.Code != -32602:
				t.Fatalf("err = %#v, want the server's JSON-RPC error -32602 in the chain", err)
			case strings.Contains(err.Error(), secret) || strings.Contains(rpc.Message, secret):
				t.Fatalf("the secret is shown: %q / %q", err.Error(), rpc.Message)
			case !strings.Contains(rpc.Message, "bad key ***"):
				t.Fatalf("the server's message is lost: %q", rpc.Message)
			}
			if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil {
				t.Fatalf("the session is not usable after a JSON-RPC error: %v", err)
			}
			if n := rec.count(sb.ReasonDropped); n != 0 || s.Info().Reconnects != 0 {
				t.Errorf("%d drops, %d reconnects after a JSON-RPC error; want none", n, s.Info().Reconnects)
			}
		})
	}
}
