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
// result, over a stdio upstream, a Streamable HTTP one and a legacy SSE
// one (always 2025-11-25) alike.
func TestOldUpstreamsElicitationReachesANewClientAsARequestForInput(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "remote")
	legacy := testserver.StartHTTP(t, "-name", "legacy", "-sse-only")
	e := newToolsetEnv(t, stdio(t, "local"),
		&sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"},
		&sb.ServerConfig{Name: "legacy", Transport: sb.TransportSSE, URL: legacy.URL})
	tok := e.createToken("alice", sb.ScopeMCP)
	for _, name := range []string{"local", "remote", "legacy"} {
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

// rootsClient connects a go-sdk client that offers the root uri to path as
// tok, in the protocol version given ("" for the newest).
func (e *toolsetEnv) rootsClient(t *testing.T, path, tok, version, uri string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
	c.AddRoots(&mcp.Root{URI: uri, Name: "work"})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url + path,
		HTTPClient: &http.Client{Transport: bearer(tok)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// A 2025-11-25 upstream's roots/list during a call is answered by the
// client that made the call, with its own roots: a 2026-07-28 client gets
// it as a request for input and answers in its retry, a 2025-11-25 client
// is sent it on the call's stream; both on the aggregate /mcp and on
// /mcp/{name}, over a stdio upstream, a Streamable HTTP one and a legacy
// SSE one. A client
// that declared no roots gets no such request, and the upstream gets an
// error, not an empty list made up for it.
func TestOldUpstreamsRootsListIsAnsweredByTheClient(t *testing.T) {
	e := oldUpstreamsEnv(t)
	tok := e.createToken("alice", sb.ScopeMCP)
	for _, server := range []string{"local", "remote", "legacy"} {
		for _, ep := range []struct{ path, tool string }{{"/mcp", server + "__roots"}, {"/mcp/" + server, "roots"}} {
			for _, version := range []string{"2026-07-28", "2025-11-25"} {
				t.Run(server+ep.path+"/"+version, func(t *testing.T) {
					uri := "file:///work/" + server + "/" + version
					cs := e.rootsClient(t, ep.path, tok, version, uri)
					if v := cs.InitializeResult().ProtocolVersion; v != version {
						t.Fatalf("negotiated %q, want %s", v, version)
					}
					waitTools(t, cs, ep.tool)
					if got := resultText(cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ep.tool})); got != "roots: "+uri {
						t.Errorf("result %q, want the client's root %s", got, uri)
					}
				})
			}
		}
		t.Run(server+"/no roots declared", func(t *testing.T) {
			r := newRequest(t, e.url+"/mcp/"+server, "tools/call", "roots", `{"name":"roots","arguments":{}}`, `{"elicitation":{}}`)
			r.Header.Set("Authorization", "Bearer "+tok)
			a := send(t, r)
			if !strings.Contains(a.result, "roots failed") || !strings.Contains(a.result, "does not support roots") {
				t.Errorf("HTTP %d, result %s, error %s; want the upstream's roots/list refused", a.status, a.result, a.err)
			}
		})
	}
	if n := gateway.HeldCalls(e.gw); n != 0 {
		t.Errorf("%d calls held at the end", n)
	}
}

// A held call's requestState answers only its own call: another
// principal's retry with it is refused (-32602) and leaves it to its
// owner; an answer of another kind than asked (roots for an elicitation)
// answers nothing, and the request is asked again under the same id.
func TestHeldRootsAndElicitationTakeOnlyTheirOwnAnswers(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "local", "-roots"))
	alice, bob := e.createToken("alice", sb.ScopeMCP), e.createToken("bob", sb.ScopeMCP)
	cs, err := e.connectAs("/mcp/local", alice, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "roots", "elicit")
	call := func(tok, tool, args, extra string) statelessAnswer {
		r := newRequest(t, e.url+"/mcp/local", "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+extra+`}`, `{"elicitation":{},"roots":{}}`)
		r.Header.Set("Authorization", "Bearer "+tok)
		return send(t, r)
	}
	asked := func(a statelessAnswer, method string) (inputRequest, string) {
		t.Helper()
		var ir inputRequest
		if err := json.Unmarshal([]byte(a.result), &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
			t.Fatalf("HTTP %d, result %s, error %s; want a request for input", a.status, a.result, a.err)
		}
		for id, req := range ir.InputRequests {
			var r struct{ Method string }
			if json.Unmarshal(req, &r); r.Method != method {
				t.Fatalf("asked %s, want %s", req, method)
			}
			return ir, id
		}
		return ir, ""
	}
	retry := func(ir inputRequest, id, answer string) string {
		return `,"inputResponses":{"` + id + `":` + answer + `},"requestState":"` + ir.RequestState + `"`
	}
	const roots = `{"roots":[{"uri":"file:///alice"}]}`

	ir, id := asked(call(alice, "roots", `{}`, ""), "roots/list")
	if a := call(bob, "roots", `{}`, retry(ir, id, roots)); !strings.Contains(a.err, `"code":-32602`) {
		t.Errorf("bob's retry with alice's state: HTTP %d, result %s, error %s; want -32602", a.status, a.result, a.err)
	}
	if a := call(alice, "roots", `{}`, retry(ir, id, roots)); !strings.Contains(a.result, "roots: file:///alice") {
		t.Errorf("alice's retry: HTTP %d, result %s, error %s; want her root", a.status, a.result, a.err)
	}

	ir, id = asked(call(alice, "elicit", `{"message":"name?"}`, ""), "elicitation/create")
	again, againID := asked(call(alice, "elicit", `{"message":"name?"}`, retry(ir, id, roots)), "elicitation/create")
	if againID != id || again.RequestState == ir.RequestState {
		t.Errorf("after a roots answer, asked %q under state %q; want %q again under a new state", againID, again.RequestState, id)
	}
	if a := call(alice, "elicit", `{"message":"name?"}`, retry(again, id, `{"action":"accept","content":{"answer":"Ada"}}`)); !strings.Contains(a.result, "answer: Ada") {
		t.Errorf("the elicitation's answer: HTTP %d, result %s, error %s; want it", a.status, a.result, a.err)
	}
	if n := gateway.HeldCalls(e.gw); n != 0 {
		t.Errorf("%d calls held at the end", n)
	}
}

// A 2025-11-25 upstream's elicitation/create during a client's
// prompts/get or resources/read is asked of that client, as during a tool call: a
// 2026-07-28 client gets it as a request for input, a 2025-11-25 one as
// the request itself; on the aggregate /mcp and on /mcp/{name}, over stdio,
// Streamable HTTP and legacy SSE: a go-sdk client of either protocol gets
// the prompt, or the resource, with its answer in it.
func TestOldUpstreamsElicitationDuringPromptsGetIsAskedOfTheClient(t *testing.T) {
	e := oldUpstreamsEnv(t)
	tok := e.createToken("alice", sb.ScopeMCP)
	for _, server := range []string{"local", "remote", "legacy"} {
		for _, ep := range []struct{ path, prefix string }{{"/mcp", server + "__"}, {"/mcp/" + server, ""}} {
			for _, version := range []string{"2026-07-28", "2025-11-25"} {
				t.Run(server+ep.path+"/"+version, func(t *testing.T) {
					asked := 0
					c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, &mcp.ClientOptions{
						ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							asked++
							return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "hello " + server}}, nil
						},
					})
					cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url + ep.path,
						HTTPClient: &http.Client{Transport: bearer(tok)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
					if err != nil {
						t.Fatal(err)
					}
					defer cs.Close()
					if v := cs.InitializeResult().ProtocolVersion; v != version {
						t.Fatalf("negotiated %q, want %s", v, version)
					}
					waitTools(t, cs, ep.prefix+"echo")
					res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: ep.prefix + "ask_prompt"})
					got := ""
					if err != nil {
						got = "error: " + err.Error()
					} else if len(res.Messages) == 1 {
						if tc, ok := res.Messages[0].Content.(*mcp.TextContent); ok {
							got = tc.Text
						}
					}
					if want := "say: hello " + server + " (accept)"; got != want || asked != 1 {
						t.Errorf("prompt %q after %d questions; want %q after one", got, asked, want)
					}
					// On /mcp, test://ask is legacy's (the first server by name to show it).
					asked = 0
					rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://ask"})
					got = ""
					if err != nil {
						got = "error: " + err.Error()
					} else if len(rr.Contents) == 1 {
						got = rr.Contents[0].Text
					}
					if want := "answer: hello " + server + " (accept)"; got != want || asked != 1 {
						t.Errorf("read %q after %d questions; want %q after one", got, asked, want)
					}
				})
			}
		}
	}
	if n := gateway.HeldCalls(e.gw); n != 0 {
		t.Errorf("%d calls held at the end", n)
	}
}

// oldUpstreamsEnv is a gateway with one 2025-11-25 testserver (-roots,
// -ask-resource) on each transport: "local" over stdio, "remote" over
// Streamable HTTP and "legacy" over legacy SSE.
func oldUpstreamsEnv(t *testing.T) *toolsetEnv {
	t.Helper()
	srv := testserver.StartHTTP(t, "-name", "remote", "-roots", "-ask-resource")
	legacy := testserver.StartHTTP(t, "-name", "legacy", "-sse-only", "-roots", "-ask-resource")
	e := newToolsetEnv(t, stdio(t, "local", "-roots", "-ask-resource"),
		&sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"},
		&sb.ServerConfig{Name: "legacy", Transport: sb.TransportSSE, URL: legacy.URL})
	return e
}
