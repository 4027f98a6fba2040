package gateway

import (
	"encoding/json"
	"testing"
)

func TestParseEnvelope(t *testing.T) {
	for _, tc := range []struct {
		body             string
		ok               bool
		name, args, tok  string
		method, id, rqID string
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
			string(env.method) != tc.method || string(env.id) != tc.id || string(env.requestID) != tc.rqID {
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
