package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// A 2025-11-25 upstream's elicitation/create during a 2026-07-28 client's
// call reaches that client as a request for input, and the client's retry
// with its answer resumes the upstream's request: a go-sdk client of the
// new protocol, which answers requests for input itself, gets the tool's
// result, over a stdio upstream and a Streamable HTTP one alike.
func TestOldUpstreamsElicitationReachesANewClientAsARequestForInput(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "remote")
	e := newToolsetEnv(t, stdio(t, "local"),
		&sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"})
	tok := e.createToken("alice", sb.ScopeMCP)
	for _, name := range []string{"local", "remote"} {
		t.Run(name, func(t *testing.T) {
			asked := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42 from " + req.Params.Message}}, nil
				},
			})
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp/" + name,
				HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", v)
			}
			waitTools(t, cs, "elicit")
			got := resultText(cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "name?"}}))
			if got != "answer: 42 from name?" || asked != 1 {
				t.Errorf("result %q after %d questions; want the answer after one", got, asked)
			}
			if n := gateway.HeldCalls(e.gw); n != 0 {
				t.Errorf("%d calls held after the result", n)
			}
		})
	}
}

// inputRequest is the request for input a stateless call was answered
// with.
type inputRequest struct {
	ResultType    string                     `json:"resultType"`
	RequestState  string                     `json:"requestState"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

// A held call's requestState is refused, with -32602 and a message that
// says why, to another principal (whose refusal leaves it to its owner)
// and once it has expired; the expired call's upstream request is gone
// with it, so that the next call's elicitation is answered. While a call
// is held, another call's elicitation on the same stdio upstream (whose
// requests name no call) is that other call's.
func TestHeldCallsStateIsRefusedToOthersAndAfterExpiry(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "local"))
	alice, bob := e.createToken("alice", sb.ScopeMCP), e.createToken("bob", sb.ScopeMCP)
	url := e.url + "/mcp/local"
	call := func(tok, extra string) statelessAnswer {
		r := newRequest(t, url, "tools/call", "elicit", `{"name":"elicit","arguments":{"message":"name?"}`+extra+`}`, `{"elicitation":{}}`)
		r.Header.Set("Authorization", "Bearer "+tok)
		return send(t, r)
	}
	cs, err := e.connectAs("/mcp/local", alice, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "elicit")
	first := func(tok string) inputRequest {
		t.Helper()
		a := call(tok, "")
		var ir inputRequest
		if err := json.Unmarshal([]byte(a.result), &ir); err != nil || ir.ResultType != "input_required" ||
			!strings.HasPrefix(ir.RequestState, "sb1.") || len(ir.InputRequests) != 1 {
			t.Fatalf("HTTP %d, result %s, error %s; want a request for input", a.status, a.result, a.err)
		}
		return ir
	}
	answers := func(ir inputRequest) string {
		out := map[string]any{}
		for id := range ir.InputRequests {
			out[id] = map[string]any{"action": "accept", "content": map[string]any{"answer": "Ada"}}
		}
		b, _ := json.Marshal(out)
		return `,"inputResponses":` + string(b) + `,"requestState":"` + ir.RequestState + `"`
	}

	ir := first(alice)
	if a := call(bob, answers(ir)); !strings.Contains(a.err, `"code":-32602`) || !strings.Contains(a.err, "belongs to another call") {
		t.Errorf("bob's retry with alice's state: HTTP %d, result %s, error %s; want -32602", a.status, a.result, a.err)
	}
	// While alice's call is held, bob's own call on the same stdio
	// upstream is asked and answered: the held call takes no server
	// request (it is parked), so bob's is not ambiguous.
	if a := call(bob, answers(first(bob))); !strings.Contains(a.result, "answer: Ada") {
		t.Errorf("bob's own call while alice's is held: HTTP %d, result %s, error %s; want the answer", a.status, a.result, a.err)
	}
	if a := call(alice, answers(ir)); !strings.Contains(a.result, "answer: Ada") {
		t.Errorf("alice's retry after bob's: HTTP %d, result %s, error %s; want the answer", a.status, a.result, a.err)
	}

	ir = first(alice)
	gateway.ExpireHeld(e.gw)
	if a := call(alice, answers(ir)); !strings.Contains(a.err, `"code":-32602`) || !strings.Contains(a.err, "has expired") {
		t.Errorf("retry after expiry: HTTP %d, result %s, error %s; want -32602", a.status, a.result, a.err)
	}
	if a := call(alice, answers(first(alice))); !strings.Contains(a.result, "answer: Ada") {
		t.Errorf("a new call after the expiry: HTTP %d, result %s, error %s; want the answer", a.status, a.result, a.err)
	}
	if n := gateway.HeldCalls(e.gw); n != 0 {
		t.Errorf("%d calls held at the end", n)
	}
}
