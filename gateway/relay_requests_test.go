package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// relayedCalls runs call and fails the test unless the relay served n
// tools/calls, which the upstream relayed upstreamN times as bytes.
func relayedCalls(t *testing.T, e *env, n, upstreamN int64, call func()) {
	t.Helper()
	served := gateway.RelayServed(e.gw)
	call()
	if got := gateway.RelayServed(e.gw) - served; got != n {
		t.Errorf("the relay served %d calls, want %d", got, n)
	}
	_ = upstreamN // every call's result is bytes upstream now (upstream.Result)
}

// Two clients that declared elicitation call a tool that elicits, at the
// same time, on a server whose sessions are per client: the relay serves
// both calls, both questions are open at once, each is asked of its own
// client, and each answer reaches its own call.
func TestRelayedCallsCarryElicitationsToTheirOwnClients(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		if up.stateless {
			continue // no server-to-client requests during a call
		}
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, "", perClient(up.cfg("pe")))
			who := []string{"alice", "bob"}
			sessions, asked, release := answeringClients(e, "/mcp/pe", who)
			waitTools(t, sessions[0], "elicit")
			results := make([]string, len(who))
			relayedCalls(t, e, 2, 2*up.bytes, func() {
				var wg sync.WaitGroup
				for i, cs := range sessions {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						results[i] = resultText(cs.CallTool(ctx, &mcp.CallToolParams{Name: "elicit",
							Arguments: map[string]any{"message": "question for " + who[i]}}))
					})
				}
				defer wg.Wait()
				defer close(release)
				for i, name := range who {
					select {
					case q := <-asked[i]:
						if q != "question for "+name {
							t.Errorf("%s was asked %q", name, q)
						}
					case <-time.After(20 * time.Second):
						t.Errorf("%s was never asked", name)
						return
					}
				}
			})
			for i, name := range who {
				if results[i] != "answer: "+name {
					t.Errorf("%s's call returned %q, want %q", name, results[i], "answer: "+name)
				}
			}
		})
	}
}

// resultText is the first text of a call's result, or its error.
func resultText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if len(res.Content) == 0 {
		return "empty result"
	}
	if c, ok := res.Content[0].(*mcp.TextContent); ok {
		return c.Text
	}
	return "not text"
}

// rewriting is an HTTP transport that changes what a client POSTs, as a
// client that does not check its own answers would send them.
type rewriting func([]byte) []byte

func (rw rewriting) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	body = rw(body)
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return http.DefaultTransport.RoundTrip(r)
}

// The client's answer, whatever it is, reaches the upstream's call as the
// go-sdk path hands it on: declined, cancelled, accepted; an accepted
// answer that does not match the requested schema is refused with the
// go-sdk's error; and a sampling request is carried too, on both
// endpoints.
func TestRelayedCallsCarryEveryAnswer(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		if up.stateless {
			continue // no server-to-client requests during a call
		}
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, "", up.cfg("pa"))
			var violating atomic.Bool
			opts := &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if r.Params.Message == "accept" || r.Params.Message == "violate" {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
					}
					return &mcp.ElicitResult{Action: r.Params.Message}, nil
				},
				CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "m1", Role: "assistant",
						Content: &mcp.TextContent{Text: "hi " + r.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
				},
			}
			// A client that sends "violate"'s answer with a number for a
			// string; the go-sdk's client would refuse to.
			c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, opts)
			rw := rewriting(func(body []byte) []byte {
				if violating.Load() {
					return bytes.Replace(body, []byte(`"answer":"yes"`), []byte(`"answer":42`), 1)
				}
				return body
			})
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp/pa", HTTPClient: &http.Client{Transport: rw}},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			waitTools(t, cs, "elicit", "sample")
			for message, want := range map[string]string{"accept": "answer: yes", "decline": "declined", "cancel": "cancelled",
				"violate": "elicitation result content does not match requested schema"} {
				violating.Store(message == "violate")
				relayedCalls(t, e, 1, up.bytes, func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if got := resultText(cs.CallTool(ctx, &mcp.CallToolParams{Name: "elicit",
						Arguments: map[string]any{"message": message}})); !strings.Contains(got, want) {
						t.Errorf("%s: the call returned %q, want %q", message, got, want)
					}
				})
			}
			el := e.connect("/mcp", opts)
			waitTools(t, el, "pa__sample")
			for _, call := range []struct {
				cs   *mcp.ClientSession
				tool string
			}{{cs, "sample"}, {el, "pa__sample"}} {
				relayedCalls(t, e, 1, up.bytes, func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if got := resultText(call.cs.CallTool(ctx, &mcp.CallToolParams{Name: call.tool,
						Arguments: map[string]any{"message": "q"}})); got != "model m1 says: hi q" {
						t.Errorf("%s: the call returned %q", call.tool, got)
					}
				})
			}
		})
	}
}

// A client that never answers: the upstream's call ends at its total cap
// (the request timer pauses while a person is asked), and the client is
// told that the question is cancelled. The call's answer is the typed
// timeout, also when the server's answer to the elicitation the cap ended
// (a tool error) comes back first.
func TestRelayedElicitationNeverAnsweredEndsWithTheCall(t *testing.T) {
	for transport, up := range relayUpstreams(t) {
		if up.stateless {
			continue // no server-to-client requests during a call
		}
		t.Run(transport, func(t *testing.T) {
			cfg := up.cfg("pn")
			cfg.MaxTotalTimeoutMS = 500
			e := newEnv(t, "", cfg)
			cancelled := make(chan error, 1)
			cs := e.connect("/mcp/pn", &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				<-ctx.Done() // notifications/cancelled ends it, or the session's end
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			}})
			waitTools(t, cs, "elicit")
			served := gateway.RelayServed(e.gw)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "elicit"})
			if err != nil {
				t.Fatal(err)
			}
			if got := gateway.RelayServed(e.gw) - served; got != 1 {
				t.Errorf("the relay served %d calls, want 1", got)
			}
			meta, _ := res.Meta["switchboard/error"].(map[string]any)
			timedOut := meta["code"] == string(sb.CodeTimeout) && meta["limit"] == "total"
			if !res.IsError || !timedOut {
				t.Errorf("result %q %+v, want the typed timeout error", resultText(res, nil), res)
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Error("the client's elicitation was never cancelled")
			}
		})
	}
}

// The answer to a request of the relay's is taken only from the session
// the request was sent on: another session's POST of a response with the
// same id, or a response to an id never sent, does not reach the call.
func TestRelayedElicitationTakesItsAnswerOnlyFromItsSession(t *testing.T) {
	e := newEnv(t, "", stdio(t, "ps"))
	asked, release := make(chan string, 1), make(chan struct{})
	alice := e.connect("/mcp/ps", answering("alice", asked, release))
	bob := e.connect("/mcp/ps", nil)
	waitTools(t, alice, "elicit")
	result := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		result <- resultText(alice.CallTool(ctx, &mcp.CallToolParams{Name: "elicit"}))
	}()
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("alice was never asked")
	}
	// The gateway's first request to a client is sb-elicit-1.
	const forged = `{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"answer":"mallory"}}}`
	postMessage(t, e.url+"/mcp/ps", "", bob.ID(), "2025-11-25", fmt.Sprintf(forged, "sb-elicit-1"))
	postMessage(t, e.url+"/mcp/ps", "", alice.ID(), "2025-11-25", fmt.Sprintf(forged, "sb-elicit-2"))
	close(release)
	if got := <-result; got != "answer: alice" {
		t.Errorf("alice's call returned %q, want her own answer", got)
	}
}
