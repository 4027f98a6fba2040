package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// newRequest is a stateless 2026-07-28 request of method with params (an
// object without _meta, which it adds), as the go-sdk client sends it:
// the protocol's headers, and _meta naming the version, the client and its
// capabilities caps.
func newRequest(t *testing.T, url, method, name, params, caps string) *http.Request {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	if rest := strings.TrimPrefix(params, "{"); rest == "}" {
		params = "{" + meta + "}"
	} else {
		params = "{" + meta + "," + rest
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	return req
}

// A 2026-07-28 client's requests that the mirror passes on (resources/read,
// prompts/get; completion/complete too, which the testserver does not serve: the
// conformance suite's completion-complete covers it) reach a 2025-11-25 Streamable HTTP
// upstream in that upstream's generation: on its session, with its
// negotiated version in Mcp-Protocol-Version and none of the new
// protocol's _meta, which the upstream would refuse (-32022, HTTP 400).
func TestNewClientsRequestsReachAnOldUpstreamInItsGeneration(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "old")
	e := newEnv(t, "", &sb.ServerConfig{Name: "old", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"})
	waitTools(t, e.connect("/mcp/old", nil), "echo")
	for _, c := range []struct {
		method, name, params, want string
	}{
		{"resources/read", "test://hello", `{"uri":"test://hello"}`, `"text":"hello"`},
		{"prompts/get", "greet", `{"name":"greet","arguments":{"name":"Ada"}}`, `Hello, Ada!`},
	} {
		a := send(t, newRequest(t, e.url+"/mcp/old", c.method, c.name, c.params, plainCaps))
		if a.status != http.StatusOK || a.err != "" || !strings.Contains(a.result, c.want) {
			t.Errorf("%s: HTTP %d, result %s, error %s; want a result with %s", c.method, a.status, a.result, a.err, c.want)
		}
	}
}

// A 2026-07-28 upstream's request for input (resultType input_required)
// reaches a 2026-07-28 client as it is, on the relay (a client that
// declared no elicitation) and on the go-sdk's path (one that did), and
// the client's retry with its answers and the upstream's requestState
// reaches the upstream: Switchboard answers nothing itself.
func TestNewUpstreamsRequestForInputGoesToANewClient(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "new", "-stateless")
	e := newEnv(t, "", &sb.ServerConfig{Name: "new", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2026-07-28"})
	waitTools(t, e.connect("/mcp/new", nil), "ask")
	for _, caps := range []string{plainCaps, `{"elicitation":{}}`} {
		first := send(t, newRequest(t, e.url+"/mcp/new", "tools/call", "ask", `{"name":"ask","arguments":{"message":"name?"}}`, caps))
		var asked struct {
			ResultType    string                     `json:"resultType"`
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal([]byte(first.result), &asked); err != nil || first.status != http.StatusOK ||
			asked.ResultType != "input_required" || asked.RequestState != "asked" || !strings.Contains(string(asked.InputRequests["answer"]), `"name?"`) {
			t.Errorf("caps %s: HTTP %d, result %s, error %s; want the upstream's request for input", caps, first.status, first.result, first.err)
			continue
		}
		retry := send(t, newRequest(t, e.url+"/mcp/new", "tools/call", "ask",
			`{"name":"ask","arguments":{"message":"name?"},"inputResponses":{"answer":{"action":"accept","content":{"answer":"Bo"}}},"requestState":"asked"}`, caps))
		if retry.status != http.StatusOK || !strings.Contains(retry.result, `"answer: Bo"`) || !strings.Contains(retry.result, `"resultType":"complete"`) {
			t.Errorf("caps %s: the retry: HTTP %d, result %s, error %s; want the upstream's answer", caps, retry.status, retry.result, retry.err)
		}
	}
}

// A 2026-07-28 client's server/discover is answered from the upstreams:
// on /mcp/NAME with that server's capabilities and identity, on /mcp with
// the union of the connected servers' (the testserver serves no
// completion, so neither endpoint offers it), not with the mirror's own
// (which offer everything, and name Switchboard).
func TestDiscoverIsAnsweredFromTheUpstreams(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "old")
	e := newEnv(t, "", &sb.ServerConfig{Name: "old", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2025-11-25"})
	waitTools(t, e.connect("/mcp/old", nil), "echo")
	for _, path := range []string{"/mcp/old", "/mcp"} {
		a := send(t, newRequest(t, e.url+path, "server/discover", "", `{}`, plainCaps))
		var res struct {
			Meta              map[string]json.RawMessage `json:"_meta"`
			SupportedVersions []string                   `json:"supportedVersions"`
			Capabilities      map[string]json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal([]byte(a.result), &res); err != nil || a.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d, result %s, error %s", path, a.status, a.result, a.err)
		}
		if _, ok := res.Capabilities["completions"]; ok || res.Capabilities["tools"] == nil || res.Capabilities["prompts"] == nil ||
			!strings.Contains(string(res.Capabilities["resources"]), `"subscribe":true`) || !slices.Contains(res.SupportedVersions, "2026-07-28") {
			t.Errorf("%s: discover %s; want the upstream's capabilities (tools, prompts, resources with subscribe, no completions)", path, a.result)
		}
		info := string(res.Meta["io.modelcontextprotocol/serverInfo"])
		if want := `"name":"old"`; path == "/mcp/old" && !strings.Contains(info, want) {
			t.Errorf("%s: serverInfo %s; want the upstream's (old)", path, info)
		}
		if path == "/mcp" && !strings.Contains(info, `"name":"switchboard"`) {
			t.Errorf("%s: serverInfo %s; want Switchboard's", path, info)
		}
	}
}

// A relayed resources/read keeps the upstream's cache hints (cacheScope
// "private", ttlMs) for a 2026-07-28 client, on /mcp/NAME and /mcp:
// Switchboard keeps no result of one principal's for another, and tells
// the client what the server said.
func TestResourceReadKeepsTheUpstreamsCacheHints(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "new", "-stateless", "-private-cache")
	e := newEnv(t, "", &sb.ServerConfig{Name: "new", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2026-07-28"})
	waitTools(t, e.connect("/mcp/new", nil), "echo")
	for _, path := range []string{"/mcp/new", "/mcp"} {
		a := send(t, newRequest(t, e.url+path, "resources/read", "test://hello", `{"uri":"test://hello"}`, plainCaps))
		var res struct {
			TTLMs      int    `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		}
		if err := json.Unmarshal([]byte(a.result), &res); err != nil || a.status != http.StatusOK || res.CacheScope != "private" || res.TTLMs != 60000 {
			t.Errorf("%s: HTTP %d, result %s, error %s; want cacheScope private, ttlMs 60000", path, a.status, a.result, a.err)
		}
	}
}

// A 2026-07-28 upstream's request for input in answer to resources/read
// (test://ask) or prompts/get (ask_prompt) is asked of a 2025-11-25 client
// as elicitation/create, and the request is sent again with its answer,
// on /mcp/NAME and /mcp, over Streamable HTTP and stdio; a 2025-11-25
// upstream's elicitation during them ("old") is asked of it as well. Each
// client is asked once per request.
func TestUpstreamsQuestionDuringReadOrPromptIsAskedOfAnOldClient(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "remote", "-stateless", "-ask-resource", "-roots")
	local := stdio(t, "local", "-ask-resource", "-roots")
	local.ProtocolVersion = "2026-07-28"
	e := newEnv(t, "", local, stdio(t, "old", "-ask-resource", "-roots"),
		&sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2026-07-28"})
	waitTools(t, e.connect("/mcp", nil), "local__echo", "old__echo", "remote__echo")
	// On /mcp, test://ask is local's (the first server by name to show it).
	for path, prompt := range map[string]string{"/mcp/remote": "ask_prompt", "/mcp/local": "ask_prompt", "/mcp/old": "ask_prompt",
		"/mcp": "remote__ask_prompt"} {
		asked := 0
		cs := e.connect(path, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Bo"}}, nil
			},
		})
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://ask"})
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else if len(res.Contents) == 1 {
			got = res.Contents[0].Text
		}
		if want := "answer: Bo (accept)"; got != want || asked != 1 {
			t.Errorf("%s: read %q after %d questions; want %q after one", path, got, asked, want)
		}
		asked = 0
		pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: prompt})
		got = ""
		if err != nil {
			got = "error: " + err.Error()
		} else if len(pr.Messages) == 1 {
			if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); ok {
				got = tc.Text
			}
		}
		if want := "say: Bo (accept)"; got != want || asked != 1 {
			t.Errorf("%s: prompt %s %q after %d questions; want %q after one", path, prompt, got, asked, want)
		}
	}
}

// A 2026-07-28 upstream's request for input in answer to resources/read
// reaches a 2026-07-28 client as it is, and the client's retry with its
// answer and the upstream's requestState reaches the upstream, on
// /mcp/NAME and /mcp: the read goes as bytes, not through the go-sdk's
// client, which would answer it itself, with nobody to ask.
func TestNewUpstreamsRequestForInputDuringResourcesReadGoesToANewClient(t *testing.T) {
	srv := testserver.StartHTTP(t, "-name", "new", "-stateless", "-ask-resource")
	e := newEnv(t, "", &sb.ServerConfig{Name: "new", Transport: sb.TransportStreamableHTTP, URL: srv.URL, ProtocolVersion: "2026-07-28"})
	waitTools(t, e.connect("/mcp", nil), "new__echo")
	for _, path := range []string{"/mcp/new", "/mcp"} {
		first := send(t, newRequest(t, e.url+path, "resources/read", "test://ask", `{"uri":"test://ask"}`, `{"elicitation":{}}`))
		var asked struct {
			ResultType    string                     `json:"resultType"`
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal([]byte(first.result), &asked); err != nil || first.status != http.StatusOK ||
			asked.ResultType != "input_required" || asked.RequestState != "asked" || asked.InputRequests["answer"] == nil {
			t.Errorf("%s: HTTP %d, result %s, error %s; want the upstream's request for input", path, first.status, first.result, first.err)
			continue
		}
		retry := send(t, newRequest(t, e.url+path, "resources/read", "test://ask",
			`{"uri":"test://ask","inputResponses":{"answer":{"action":"accept","content":{"answer":"Bo"}}},"requestState":"asked"}`, `{"elicitation":{}}`))
		if retry.status != http.StatusOK || !strings.Contains(retry.result, `"answer: Bo (accept)"`) {
			t.Errorf("%s: the retry: HTTP %d, result %s, error %s; want the upstream's answer", path, retry.status, retry.result, retry.err)
		}
	}
}
