package gateway_test

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// plainCaps are the client capabilities of a go-sdk client without
// handlers; samplingCaps those of a client that can be asked to sample,
// whose calls the relay leaves to the go-sdk.
const (
	plainCaps    = `{"roots":{"listChanged":true}}`
	samplingCaps = `{"roots":{"listChanged":true},"sampling":{}}`
)

// statelessRequest is a stateless 2026-07-28 tools/call as the go-sdk
// client sends it, with the client capabilities caps and the members
// extraMeta (if any) in _meta.
func statelessRequest(t *testing.T, url, tool, args, caps, extraMeta string) *http.Request {
	t.Helper()
	meta := `{"io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"` + extraMeta + `}`
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + meta + `,"name":"` + tool + `","arguments":` + args + `}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	return req
}

// statelessAnswer is what the endpoint answered a stateless call.
type statelessAnswer struct {
	status   int
	messages []string // the JSON-RPC messages, in order: a JSON body's one, or a stream's events
	result   string   // the response's result, raw; "" if none
	err      string   // the response's error, raw; "" if none
}

// send sends req and reads the answer.
func send(t *testing.T, req *http.Request) statelessAnswer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := statelessAnswer{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(b)) {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				a.messages = append(a.messages, strings.TrimSpace(data))
			}
		}
	} else {
		a.messages = []string{string(b)}
	}
	var msg struct{ Result, Error json.RawMessage }
	if len(a.messages) > 0 && json.Unmarshal([]byte(a.messages[len(a.messages)-1]), &msg) == nil {
		a.result, a.err = string(msg.Result), string(msg.Error)
	}
	return a
}

// The stateless calls of the 2026-07-28 protocol are relayed on both
// endpoints, and their results are the go-sdk path's, byte for byte: a
// result, a tool's isError result, a result over the size cap (the typed
// error), and a call the upstream answers with a JSON-RPC error.
func TestRelayServesStatelessCallsAsTheGoSDKDoes(t *testing.T) {
	e := newEnvRegistry(t, "", registryWithResultCap(2000), gateway.Options{}, stdio(t, "r"))
	waitTools(t, e.connect("/mcp/r", nil), "echo")
	waitTools(t, e.connect("/mcp", nil), "r__echo")
	for path, prefix := range map[string]string{"/mcp/r": "", "/mcp": "r__"} {
		for _, c := range []struct {
			tool, args string
			upstreamN  int64 // calls the upstream relays as bytes
		}{
			{"echo", `{"text":"héllo \"x\"\n"}`, 1},
			{"fail", `{"message":"no"}`, 1},
			{"big", `{"bytes":1500}`, 1},
			{"big", `{"bytes":3000}`, 1}, // over the cap: decoded, measured, refused
			{"rpc_error", `{"code":-32000,"message":"nope"}`, 0},
		} {
			tool := prefix + c.tool
			served := gateway.RelayServed(e.gw)
			relayed := send(t, statelessRequest(t, e.url+path, tool, c.args, plainCaps, ""))
			if got := gateway.RelayServed(e.gw) - served; got != 1 {
				t.Errorf("%s %s: the relay served %d calls, want 1", path, tool, got)
			}
			served = gateway.RelayServed(e.gw)
			sdk := send(t, statelessRequest(t, e.url+path, tool, c.args, samplingCaps, ""))
			if got := gateway.RelayServed(e.gw) - served; got != 0 {
				t.Errorf("%s %s: the relay served a call it should have left to the go-sdk", path, tool)
			}
			if relayed.status != http.StatusOK || relayed.status != sdk.status || relayed.result != sdk.result || relayed.err != sdk.err ||
				relayed.result == "" && relayed.err == "" {
				t.Errorf("%s %s:\nrelayed %d result %s error %s\ngo-sdk  %d result %s error %s", path, tool,
					relayed.status, relayed.result, relayed.err, sdk.status, sdk.result, sdk.err)
			}
		}
	}
}

// registryWithResultCap is the registry's options with upstream results
// capped at n bytes.
func registryWithResultCap(n int) registry.Options {
	return registry.Options{Session: upstream.Options{MaxResultBytes: n}}
}

// A relayed stateless call with a progress token streams the progress
// before its result, as the go-sdk does.
func TestRelayedStatelessCallStreamsProgress(t *testing.T) {
	e := newEnv(t, "", stdio(t, "p"))
	waitTools(t, e.connect("/mcp/p", nil), "slow")
	served := gateway.RelayServed(e.gw)
	a := send(t, statelessRequest(t, e.url+"/mcp/p", "slow", `{"duration_ms":100,"interval_ms":20}`, plainCaps, `,"progressToken":"tok"`))
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d calls, want 1", got)
	}
	if len(a.messages) != 6 || a.result == "" {
		t.Fatalf("%d messages, want 5 progress notifications and the result:\n%s", len(a.messages), strings.Join(a.messages, "\n"))
	}
	for i, m := range a.messages[:5] {
		if !strings.Contains(m, `"method":"notifications/progress","params":{"progressToken":"tok","progress":`+string(rune('1'+i))) {
			t.Errorf("message %d: %s, want progress %d", i, m, i+1)
		}
	}
}

// What the relay cannot tell passes the go-sdk's checks goes to the go-sdk,
// which answers it as before: each of these is refused there, or served
// there, and never by the relay.
func TestStatelessCallsTheRelayLeavesToTheGoSDK(t *testing.T) {
	e := newEnv(t, "", stdio(t, "g"))
	waitTools(t, e.connect("/mcp/g", nil), "echo")
	url := e.url + "/mcp/g"
	for _, c := range []struct {
		name   string
		req    func() *http.Request
		status int    // the go-sdk's answer
		result string // a part of its result if it serves the call; "-" for a refusal in plain text; else it answers a JSON-RPC error
	}{
		{"a client that can be asked to sample", func() *http.Request {
			return statelessRequest(t, url, "echo", `{"text":"s"}`, samplingCaps, "")
		}, http.StatusOK, `"text":"s"`},
		{"a client that can be asked to elicit", func() *http.Request {
			return statelessRequest(t, url, "echo", `{"text":"e"}`, `{"elicitation":{}}`, "")
		}, http.StatusOK, `"text":"e"`},
		{"a log level", func() *http.Request {
			return statelessRequest(t, url, "echo", `{"text":"l"}`, plainCaps, `,"io.modelcontextprotocol/logLevel":"debug"`)
		}, http.StatusOK, `"text":"l"`},
		{"no Mcp-Name header", func() *http.Request {
			r := statelessRequest(t, url, "echo", `{"text":"x"}`, plainCaps, "")
			r.Header.Del("Mcp-Name")
			return r
		}, http.StatusBadRequest, ""},
		{"an Mcp-Name header naming another tool", func() *http.Request {
			r := statelessRequest(t, url, "echo", `{"text":"x"}`, plainCaps, "")
			r.Header.Set("Mcp-Name", "add")
			return r
		}, http.StatusBadRequest, ""},
		{"a version in _meta unlike the header's", func() *http.Request {
			r := statelessRequest(t, url, "echo", `{"text":"x"}`, plainCaps, "")
			r.Header.Set("Mcp-Protocol-Version", "2026-07-29")
			return r
		}, http.StatusBadRequest, ""},
		{"invalid client capabilities", func() *http.Request {
			return statelessRequest(t, url, "echo", `{"text":"x"}`, `{"roots":{"listChanged":"yes"}}`, "")
		}, http.StatusBadRequest, ""},
		{"a Last-Event-ID header", func() *http.Request {
			r := statelessRequest(t, url, "echo", `{"text":"x"}`, plainCaps, "")
			r.Header.Set("Last-Event-ID", "1")
			return r
		}, http.StatusBadRequest, "-"}, // plain text, not JSON-RPC
		{"a tool not shown", func() *http.Request {
			return statelessRequest(t, url, "nope", `{}`, plainCaps, "")
		}, http.StatusBadRequest, ""},
	} {
		served := gateway.RelayServed(e.gw)
		a := send(t, c.req())
		if got := gateway.RelayServed(e.gw) - served; got != 0 {
			t.Errorf("%s: the relay served it", c.name)
		}
		if c.result == "-" {
			if a.status != c.status {
				t.Errorf("%s: %d %v, want %d", c.name, a.status, a.messages, c.status)
			}
			continue
		}
		if a.status != c.status || c.result != "" && !strings.Contains(a.result, c.result) ||
			c.result == "" && a.err == "" {
			t.Errorf("%s: %d %v, want %d and %s", c.name, a.status, a.messages, c.status, cmp.Or(c.result, "an error"))
		}
	}
}

// Toolset endpoints are relayed as the others are, stateless and stateful:
// the toolset decides on every call, a tool it allows is answered as
// bytes, and one it hides is refused as an unknown tool (the go-sdk path).
func TestToolsetCallsAreRelayed(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	if _, err := e.toolsets.Create(t.Context(), &coder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("coder-bot", sb.ToolsetScope("coder"))
	url := e.url + "/toolsets/coder/mcp"
	call := func(tool, args string) statelessAnswer {
		r := statelessRequest(t, url, tool, args, plainCaps, "")
		r.Header.Set("Authorization", "Bearer "+tok)
		return send(t, r)
	}
	var a statelessAnswer
	for range 100 { // the toolset's tools appear once its servers connect
		if a = call("say", `{"text":"hi"}`); strings.Contains(a.result, `"text":"hi"`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(a.result, `"text":"hi"`) {
		t.Fatalf("say: %d %v", a.status, a.messages)
	}
	served := gateway.RelayServed(e.gw)
	if a := call("say", `{"text":"again"}`); !strings.Contains(a.result, `"text":"again"`) {
		t.Errorf("say, once listed: %d %v", a.status, a.messages)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("stateless: the relay served %d toolset calls, want 1", got)
	}
	if a := call("alpha__echo", `{"text":"hi"}`); a.err == "" || strings.Contains(a.result, `"text":"hi"`) {
		t.Errorf("a tool the toolset hides: %d %v, want it refused", a.status, a.messages)
	}

	cs, err := e.connectAs("/toolsets/coder/mcp", tok, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "say", "beta__add")
	served = gateway.RelayServed(e.gw)
	if got := text(t)(cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "stateful"}})); got != "stateful" {
		t.Errorf("say on a session: %q", got)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("stateful: the relay served %d toolset calls, want 1", got)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil || !strings.Contains(err.Error(), `unknown tool "echo"`) {
		t.Errorf("a tool the toolset hides, on a session: %v, want it unknown", err)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d toolset calls, want only the allowed one", got)
	}
}

// On a stateful session, the members of _meta that only the 2026-07-28
// protocol sends are refused by the go-sdk; the relay leaves such a call
// to it.
func TestStatefulCallWithTheNewProtocolsMetaIsTheGoSDKs(t *testing.T) {
	e := newEnv(t, "", stdio(t, "m"))
	cs := e.connect("/mcp/m", nil)
	waitTools(t, cs, "echo")
	served := gateway.RelayServed(e.gw)
	resp := rawPost(t, e.url+"/mcp/m", "", cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want the go-sdk's 400", resp.StatusCode)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 0 {
		t.Errorf("the relay served it")
	}
}
