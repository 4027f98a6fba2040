package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseEnvelope(t *testing.T) {
	for _, tc := range []struct {
		body             string
		ok               bool
		name, args, tok  string
		method, id, rqID string
		response         bool // a client's response (relay_requests.go)
	}{
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":"p1"}}}`,
			ok: true, name: "echo", args: `{"text":"x"}`, tok: `"p1"`, method: `"tools/call"`, id: `7`},
		{body: `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`, ok: true, name: "echo", method: `"tools/call"`, id: `"a"`},
		{body: `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":null}}`}, // the go-sdk path refuses null
		{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, ok: true, method: `"notifications/cancelled"`, rqID: `7`},
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`},                                           // not relayed
		{body: `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`},                           // no id
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"e\u0063ho"}}`},                         // escaped name
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","task":{}}}`},                    // params beyond the three
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"extra":1}`},                    // members beyond the four
		{body: `{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"echo"}}`},                              // not JSON-RPC 2.0
		{body: `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}]`},                            // a batch
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":}}}`},           // malformed
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":{}}}}`}, // odd token
		{body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":null,"x":1}}}`,
			ok: true, name: "echo", method: `"tools/call"`, id: `7`},
		{body: `{"jsonrpc":"2.0","id":"sb-elicit-1","result":{"action":"decline"}}`, ok: true, id: `"sb-elicit-1"`, response: true},
		{body: `{"jsonrpc":"2.0","id":"sb-sample-2","error":{"code":-1,"message":"no"}}`, ok: true, id: `"sb-sample-2"`, response: true},
		{body: `{"jsonrpc":"2.0","id":"sb-elicit-1","result":{},"error":{"code":-1,"message":"no"}}`},             // both
		{body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},                     // no id
		{body: `{"jsonrpc":"2.0","id":"sb-elicit-1","method":"tools/call","params":{"name":"echo"},"result":{}}`}, // a request too
		{body: `{"jsonrpc":"2.0","id":"sb-elicit-1","result":{},"params":{}}`},                                    // params
		{body: `{"jsonrpc":"2.0","id":"sb-elicit-1"}`},                                                            // neither
	} {
		env, ok := parseEnvelope([]byte(tc.body))
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.body, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if env.name != tc.name || string(env.args) != tc.args || string(env.token) != tc.tok ||
			string(env.method) != tc.method || string(env.id) != tc.id || string(env.requestID) != tc.rqID ||
			(env.response != nil) != tc.response {
			t.Errorf("%s: got name %q args %s token %s method %s id %s requestId %s", tc.body, env.name, env.args, env.token, env.method, env.id, env.requestID)
		}
	}
}

// Whatever the relay takes for a tools/call is valid JSON-RPC that
// encoding/json reads the same way.
func FuzzRelayEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":"p1"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, ok := parseEnvelope(body)
		if !ok || string(env.method) != `"tools/call"` {
			return
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Params  struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Meta      struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("the relay took %q, which encoding/json refuses: %v", body, err)
		}
		if msg.JSONRPC != "2.0" || msg.Params.Name != env.name || len(env.id) == 0 {
			t.Fatalf("%q: relay read name %q id %s; encoding/json %q %s", body, env.name, env.id, msg.Params.Name, msg.ID)
		}
	})
}

// The relay reads the members of _meta the 2026-07-28 protocol defines,
// and leaves a key spelled with escapes to the go-sdk.
func TestParseEnvelopeMeta(t *testing.T) {
	env, ok := parseEnvelope([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":1},"name":"echo"}}`))
	if !ok || string(env.caps) != `{}` || string(env.info) != `{"name":"t"}` || string(env.version) != `"2026-07-28"` || env.other {
		t.Errorf("ok %v, caps %s info %s version %s other %v", ok, env.caps, env.info, env.version, env.other)
	}
	if env, ok := parseEnvelope([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/logLevel":"info"},"name":"echo"}}`)); !ok || !env.other {
		t.Errorf("a log level: ok %v, other %v; want it read as another member of the protocol's", ok, env.other)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progress\u0054oken":"p"},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"},"name":"echo"}}`,
	} {
		if _, ok := parseEnvelope([]byte(body)); ok {
			t.Errorf("%s: taken, want it left to the go-sdk", body)
		}
	}
}

func TestStatelessResult(t *testing.T) {
	const info = `{"name":"switchboard/s","version":"dev"}`
	for _, tc := range []struct{ in, want string }{
		{`{"content":[],"isError":true}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"content":[],"isError":true,"resultType":"complete"}`},
		{` { } `, `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"resultType":"complete"}`},
		// The slow path: the members sorted, as encoding/json writes a map.
		{`{"content":[],"_meta":{"a":1}}`, `{"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":` + info + `},"content":[],"resultType":"complete"}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"resultType":"complete"}`},
		{`{"_meta":null,"resultType":"other"}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"resultType":"complete"}`},
		// A 2026-07-28 upstream's request for input, for the client.
		{`{"inputRequests":{"a":{"method":"roots/list"}},"resultType":"input_required"}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"inputRequests":{"a":{"method":"roots/list"}},"resultType":"input_required"}`},
		{`{"_m\u0065ta":{"a":1}}`, `{"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":` + info + `},"resultType":"complete"}`},
	} {
		pieces, err := statelessResult([]byte(tc.in), []byte(info))
		if got := string(bytes.Join(pieces, nil)); err != nil || got != tc.want {
			t.Errorf("%s:\ngot  %s (%v)\nwant %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{`[]`, `{"_meta":"x"}`, `{"a":}`} {
		if _, err := statelessResult([]byte(in), []byte(info)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// Whatever statelessResult makes of an object is that object, with the
// server's info in _meta unless it named one, and resultType "complete"
// (unless it was "input_required").
func FuzzStatelessResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`))
	f.Add([]byte(`{"_meta":{"a":1},"resultType":"x"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var want map[string]json.RawMessage
		if json.Unmarshal(in, &want) != nil {
			return
		}
		pieces, err := statelessResult(in, []byte(`{"name":"s"}`))
		if err != nil {
			return // a _meta that is not an object
		}
		var got map[string]json.RawMessage
		out := bytes.Join(pieces, nil)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s made %s: %v", in, out, err)
		}
		if string(got["resultType"]) != `"complete"` && (string(want["resultType"]) != `"input_required"` || string(got["resultType"]) != `"input_required"`) {
			t.Fatalf("%s made %s: no resultType complete", in, out)
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(got["_meta"], &meta); err != nil || meta["io.modelcontextprotocol/serverInfo"] == nil {
			t.Fatalf("%s made %s: no serverInfo in _meta", in, out)
		}
		for k, v := range want {
			if k == "_meta" || k == "resultType" {
				continue
			}
			if !equalJSON(v, got[k]) {
				t.Fatalf("%s made %s: member %q changed", in, out, k)
			}
		}
		if len(got) != len(want)+boolInt(want["_meta"] == nil)+boolInt(want["resultType"] == nil) {
			t.Fatalf("%s made %s: members added or lost", in, out)
		}
	})
}

// equalJSON reports whether a and b are the same JSON value: the same
// members and numbers as written, however their strings are escaped
// (encoding/json writes "&" as "\u0026", as the go-sdk's path does too).
func equalJSON(a, b []byte) bool {
	x, errX := decodeNumbers(a)
	y, errY := decodeNumbers(b)
	return errX == nil && errY == nil && reflect.DeepEqual(x, y)
}

// decodeNumbers decodes b keeping its numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// paramHeaders finds an x-mcp-header annotation in a schema however the
// session holds it: decoded, or as JSON (escaped names included).
func TestParamHeaders(t *testing.T) {
	for _, tt := range []struct {
		schema any
		want   bool
	}{
		{nil, false},
		{json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`), false},
		{json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"X-Q"}}}`), true},
		{json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","properties":{"q":{"x-mcp-header":"X-Q"}}}}}`), true},
		{json.RawMessage(`{"type":"object","properties":{"q":{"x-mcp\u002dheader":"X-Q"}}}`), true},
		{json.RawMessage(`{"type":"object","properties":{"q":{"description":"x-mcp-header is not set"}}}`), false},
		{map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"x-mcp-header": "X-Q"}}}, true},
		{map[string]any{"type": "object"}, false},
		{struct{}{}, true}, // a form it cannot look into
	} {
		if got := paramHeaders(tt.schema); got != tt.want {
			t.Errorf("paramHeaders(%v) = %v, want %v", tt.schema, got, tt.want)
		}
	}
}

// The gateway's own checks of its requests to clients give the verdicts
// that the go-sdk's ServerSession.Elicit and CreateMessage give.
func TestServerRequestChecks(t *testing.T) {
	form, url := &mcp.FormElicitationCapabilities{}, &mcp.URLElicitationCapabilities{}
	caps := func(e *mcp.ElicitationCapabilities) *mcp.InitializeParams {
		return &mcp.InitializeParams{Capabilities: &mcp.ClientCapabilities{Elicitation: e}}
	}
	for _, c := range []struct {
		p     *mcp.InitializeParams
		mode  string
		allow bool
	}{
		{caps(nil), "form", false},
		{caps(&mcp.ElicitationCapabilities{}), "form", true}, // neither mode declared: form
		{caps(&mcp.ElicitationCapabilities{}), "url", false},
		{caps(&mcp.ElicitationCapabilities{URL: url}), "form", false},
		{caps(&mcp.ElicitationCapabilities{URL: url}), "url", true},
		{caps(&mcp.ElicitationCapabilities{Form: form}), "form", true},
		{caps(&mcp.ElicitationCapabilities{Form: form}), "url", false},
	} {
		if err := elicitationAllowed(c.p, c.mode); (err == nil) != c.allow {
			t.Errorf("%+v in mode %s: %v, want allowed %v", c.p.Capabilities.Elicitation, c.mode, err, c.allow)
		}
	}

	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","default":3}},"required":["name"]}`)
	for _, c := range []struct {
		schema, result string
		want           string // the content as checked, or the start of the error
	}{
		{string(schema), `{"action":"accept","content":{"name":"x"}}`, `{"n":3,"name":"x"}`}, // defaults applied
		{string(schema), `{"action":"accept","content":{"name":42}}`, "elicitation result content does not match requested schema"},
		{string(schema), `{"action":"accept","content":{}}`, "elicitation result content does not match requested schema"},
		{string(schema), `{"action":"decline"}`, `null`},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}}}}}`, `{"action":"accept","content":{"o":{}}}`, "elicit schema property \"o\" contains nested properties"},
		{`{"type":"array"}`, `{"action":"accept","content":{}}`, "elicit schema must be of type 'object'"},
		{`{"type":"object","properties":{"o":{"type":"null"}}}`, `{"action":"accept","content":{}}`, "elicit schema property \"o\" has unsupported type"},
	} {
		got, err := checkElicitation(json.RawMessage(c.schema), json.RawMessage(c.result))
		out := ""
		if err != nil {
			out = err.Error()
		} else {
			b, _ := json.Marshal(got.Content)
			out = string(b)
		}
		if !strings.HasPrefix(out, c.want) {
			t.Errorf("%s answered %s: %s, want %s", c.schema, c.result, out, c.want)
		}
	}

	if _, err := checkSampling(json.RawMessage(`{"model":"m","role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)); err == nil {
		t.Error("a sampling result of two content blocks was taken")
	}
	got, err := checkSampling(json.RawMessage(`{"model":"m","role":"assistant","content":{"type":"text","text":"a"}}`))
	if err != nil || !strings.Contains(string(got), `"text":"a"`) || !strings.Contains(string(got), `"model":"m"`) {
		t.Errorf("a sampling result of one block: %s %v", got, err)
	}
}
