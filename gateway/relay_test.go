package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// relayed is relayedCalls for exactly one tools/call, which the upstream
// relayed as bytes upstreamN times (0 for a call the upstream never
// answered with a result or an error).
func relayed(t *testing.T, e *env, upstreamN int64, call func()) {
	t.Helper()
	relayedCalls(t, e, 1, upstreamN, call)
}

// relayUpstreams are the upstreams the relay's tests run on, by
// transport: cfg makes a server of that transport named name (a testserver
// given args), and bytes is the number of calls the upstream relays as
// bytes per relayed call that it answers (on every transport: a byte
// stream's call is relayed whole, an HTTP call's result taken from its
// answer). outOfBand is set where the upstream sends a call's
// notifications apart from its result: a Streamable HTTP server answering
// with one JSON body sends them on its standalone stream, a connection of
// their own, so the last of them may reach Switchboard after the result and
// are then dropped (none may follow a result). stateless is set where the
// link is of 2026-07-28, on which a server sends no requests during a call
// (it answers with a request for input instead).
func relayUpstreams(t *testing.T) map[string]relayUpstream {
	remote := func(transport sb.Transport, extra ...string) func(string, ...string) *sb.ServerConfig {
		return func(name string, args ...string) *sb.ServerConfig {
			srv := testserver.StartHTTP(t, append(append([]string{"-name", name}, extra...), args...)...)
			return &sb.ServerConfig{Name: name, Transport: transport, URL: srv.URL, ProtocolVersion: "2025-11-25"}
		}
	}
	return map[string]relayUpstream{
		"stdio": {cfg: func(name string, args ...string) *sb.ServerConfig { return stdio(t, name, args...) }, bytes: 1},
		"stdio 2026-07-28": {cfg: func(name string, args ...string) *sb.ServerConfig {
			c := stdio(t, name, args...)
			c.ProtocolVersion = "2026-07-28" // the testserver answers server/discover
			return c
		}, bytes: 1, stateless: true},
		"streamable-http":      {cfg: remote(sb.TransportStreamableHTTP), bytes: 1},
		"streamable-http json": {cfg: remote(sb.TransportStreamableHTTP, "-json-response"), bytes: 1, outOfBand: true},
		"sse":                  {cfg: remote(sb.TransportSSE, "-sse-only"), bytes: 1},
	}
}

type relayUpstream struct {
	cfg       func(name string, args ...string) *sb.ServerConfig
	bytes     int64
	outOfBand bool
	stateless bool
}

func TestRelayCarriesCallsOnBothEndpoints(t *testing.T) {
	e := newEnv(t, "", stdio(t, "r"))
	for path, tool := range map[string]string{"/mcp/r": "echo", "/mcp": "r__echo"} {
		cs := e.connect(path, nil)
		waitTools(t, cs, tool)
		relayed(t, e, 1, func() {
			if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "héllo \"x\"\n"}})); got != "héllo \"x\"\n" {
				t.Errorf("%s: echo = %q", path, got)
			}
		})
	}
}

func TestRelayedProgressArrivesInOrderBeforeTheResult(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, "", up.cfg("p"))
			var mu sync.Mutex
			var got []float64
			cs := e.connect("/mcp/p", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				if r.Params.ProgressToken == "tok" {
					got = append(got, r.Params.Progress)
				}
			}})
			waitTools(t, cs, "slow")
			params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"duration_ms": 200, "interval_ms": 20}}
			params.SetProgressToken("tok")
			relayed(t, e, up.bytes, func() { text(t)(cs.CallTool(context.Background(), params)) })
			// The go-sdk client handles notifications on a goroutine of its
			// own: they are all on the wire before the result, but may be
			// handled after.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= 10 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
			if up.outOfBand && len(got) >= 5 && len(got) < len(want) {
				// The standalone stream lost the race with the result
				// for the last ones, sent within 100 ms of it: what
				// arrived must still be the first ones, in order.
				want = want[:len(got)]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("progress %v, want %v", got, want)
			}
		})
	}
}

func TestRelayedCallCancelledDownstreamIsCancelledUpstream(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		t.Run(transport, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			e := newEnv(t, "", up.cfg("c", "-events", events))
			cs := e.connect("/mcp/c", nil)
			waitTools(t, cs, "sleep")
			relayed(t, e, 0, func() {
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 30000}})
					errc <- err
				}()
				testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "call" && ev.Tool == "sleep" }, 10*time.Second)
				cancel()
				if err := <-errc; err == nil {
					t.Fatal("the cancelled call succeeded")
				}
				testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "cancelled" && ev.Tool == "sleep" }, 5*time.Second)
			})
		})
	}
}

func TestRelayedCallTimingOutIsCancelledUpstreamWithTheTypedError(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		t.Run(transport, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			cfg := up.cfg("t", "-events", events)
			cfg.CallTimeoutMS = 300
			e := newEnv(t, "", cfg)
			cs := e.connect("/mcp/t", nil)
			waitTools(t, cs, "sleep")
			relayed(t, e, 0, func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 30000}})
				if err != nil {
					t.Fatal(err)
				}
				if meta, _ := res.Meta["switchboard/error"].(map[string]any); !res.IsError || meta["code"] != string(sb.CodeTimeout) || meta["limit"] != "request" {
					t.Errorf("result %+v, want the typed timeout error", res)
				}
			})
			testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "cancelled" && ev.Tool == "sleep" }, 5*time.Second)
		})
	}
}

func TestRelayedErrorsAreTheTypedOnes(t *testing.T) {
	e := newEnvRegistry(t, "", registry.Options{Session: upstream.Options{MaxResultBytes: 1000}}, gateway.Options{}, stdio(t, "x"))
	cs := e.connect("/mcp/x", nil)
	waitTools(t, cs, "big", "fail", "rpc_error", "crash")
	call := func(tool string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	code := func(res *mcp.CallToolResult) any {
		meta, _ := res.Meta["switchboard/error"].(map[string]any)
		return meta["code"]
	}
	relayed(t, e, 1, func() {
		if res, err := call("big", map[string]any{"bytes": 900}); err != nil || res.IsError || len(res.Content[0].(*mcp.TextContent).Text) != 900 {
			t.Errorf("big under the cap: %v %+v", err, res)
		}
	})
	relayed(t, e, 1, func() {
		if res, err := call("big", map[string]any{"bytes": 2000}); err != nil || !res.IsError || code(res) != string(sb.CodeResultTooLarge) {
			t.Errorf("big over the cap: %v %+v, want result_too_large", err, res)
		}
	})
	relayed(t, e, 1, func() {
		if res, err := call("fail", map[string]any{"message": "no"}); err != nil || !res.IsError || res.Meta["switchboard/error"] != nil {
			t.Errorf("tool error: %v %+v, want the tool's own isError result", err, res)
		}
	})
	relayed(t, e, 0, func() {
		var rpc *jsonrpc.Error
		if _, err := call("rpc_error", map[string]any{"code": -32000, "message": "nope"}); !errors.As(err, &rpc) || rpc.Code != -32000 || rpc.Message != "nope" {
			t.Errorf("rpc error: %v, want the upstream's JSON-RPC error", err)
		}
	})
	relayed(t, e, 0, func() {
		if res, err := call("echo", map[string]any{"text": 42}); err != nil || !res.IsError || code(res) != string(sb.CodeInvalidArguments) {
			t.Errorf("bad arguments: %v %+v, want invalid_arguments", err, res)
		}
	})
	relayed(t, e, 0, func() {
		res, err := call("crash", map[string]any{})
		if err != nil || !res.IsError || code(res) != string(sb.CodeConnectionLost) ||
			!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "exited with status 3") {
			t.Errorf("crash: %v %+v, want connection_lost naming the exit", err, res)
		}
	})
}

func TestToolsNotShownTakeTheGoSDKPath(t *testing.T) {
	e := newEnv(t, "", stdio(t, "f"))
	cs := e.connect("/mcp/f", nil)
	waitTools(t, cs, "echo")
	served := gateway.RelayServed(e.gw)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("a tool that does not exist was called")
	}
	if got := gateway.RelayServed(e.gw) - served; got != 0 {
		t.Errorf("the relay served %d calls it should have left to the go-sdk", got)
	}
}

// The relay keeps the go-sdk's DNS-rebinding protection: on a loopback
// listener, a call whose Host is not a loopback name is refused, session
// or not.
func TestRelayKeepsTheHostCheck(t *testing.T) {
	e := newEnv(t, "", stdio(t, "h"))
	srv := httptest.NewServer(e.gw.Handler()) // no API in front: the go-sdk's own check applies
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/h"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	waitTools(t, cs, "echo")
	post := func(host string) int {
		resp := rawPost(t, srv.URL+"/mcp/h", host, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The endpoint makes the go-sdk's Host check itself, for every
	// request of a session.
	served := gateway.RelayServed(e.gw)
	if got := post(strings.TrimPrefix(srv.URL, "http://")); got != http.StatusOK {
		t.Errorf("a call with the listener's Host: %d, want 200", got)
	}
	if got := post("attacker.example"); got != http.StatusForbidden {
		t.Errorf("the same call with Host attacker.example: %d, want 403", got)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d calls, want 1 (the one with the listener's Host)", got)
	}
}

// Relayed calls never reach the go-sdk's server: the endpoint's idle timer
// counts them as it counts every POST, so that a session busy with calls
// alone lives on.
func TestRelayedCallsKeepTheSessionAlive(t *testing.T) {
	e := newEnvWith(t, gateway.Options{SessionTimeout: 600 * time.Millisecond}, stdio(t, "k"))
	cs := e.connect("/mcp/k", nil)
	waitTools(t, cs, "echo")
	for i := range 8 { // 1.6 s of calls alone, well past the timeout
		relayed(t, e, 1, func() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		})
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the session ended under relayed calls: %v", err)
	}
}

// rawPost POSTs one JSON-RPC message on session sessionID as a go-sdk
// client would, with Host host if it is not empty.
func rawPost(t *testing.T, url, host, sessionID, body string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(rawRequest(t, url, host, sessionID, body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawRequest is the request rawPost sends.
func rawRequest(t *testing.T, url, host, sessionID, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sessionID)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return req
}

// A client's notifications/cancelled for a relayed call reaches the
// relay (202), which cancels the call upstream and leaves it unanswered.
func TestRelayedCallCancelledByNotification(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	e := newEnv(t, "", stdio(t, "n", "-events", events))
	cs := e.connect("/mcp/n", nil)
	waitTools(t, cs, "sleep")
	served := gateway.RelayServed(e.gw)
	call := rawRequest(t, e.url+"/mcp/n", "", cs.ID(), `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}}`)
	answer := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(call)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "call" && ev.Tool == "sleep" }, 10*time.Second)
	resp := rawPost(t, e.url+"/mcp/n", "", cs.ID(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"enough"}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %d, want 202", resp.StatusCode)
	}
	testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "cancelled" && ev.Tool == "sleep" }, 5*time.Second)
	if got := <-answer; strings.Contains(got, `"c-1"`) {
		t.Errorf("the cancelled call was answered: %s", got)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d calls, want 1", got)
	}
}

// A client's call over a remote server's request body limit (the
// go-sdk's servers answer it 413) is refused alone with the typed
// server_error: another client's call in flight on the same upstream
// connection completes, and the server stays connected.
func TestRelayedCallOverTheUpstreamsBodyLimitFailsAlone(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		if strings.HasPrefix(transport, "stdio") {
			continue // a pipe has no body limit
		}
		t.Run(transport, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			e := newEnv(t, "", up.cfg("b", "-events", events, "-max-request-body", "65536"))
			alice, bob := e.connect("/mcp/b", nil), e.connect("/mcp", nil)
			waitTools(t, alice, "sleep", "echo")
			waitTools(t, bob, "b__echo")
			slow := make(chan string, 1)
			go func() {
				slow <- resultText(alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1000}}))
			}()
			testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "call" && ev.Tool == "sleep" }, 10*time.Second)
			res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"text": strings.Repeat("x", 100<<10)}})
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := res.Meta["switchboard/error"].(map[string]any)
			if !res.IsError || meta["code"] != string(sb.CodeServerError) || !strings.Contains(resultText(res, nil), "HTTP 413") {
				t.Errorf("the call over the limit: %q %+v, want the typed server_error naming HTTP 413", resultText(res, nil), meta)
			}
			if got := <-slow; strings.HasPrefix(got, "error") || strings.Contains(got, "connection") {
				t.Errorf("the call in flight meanwhile returned %q", got)
			}
			if got := text(t)(bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"text": "hi"}})); got != "hi" {
				t.Errorf("the call after: %q", got)
			}
			if v, err := e.reg.Get("b"); err != nil || v.Runtime.Reconnects != 0 {
				t.Errorf("the upstream reconnected %d times (%v); its connection was fine", v.Runtime.Reconnects, err)
			}
		})
	}
}
