package upstream

import (
	"encoding/json"
	"testing"
)

// A call's _meta is relayed as the JSON that json.Marshal makes of the
// go-sdk's form of it, byte for byte.
func TestCallMetaEncodesAsTheGoSDKsForm(t *testing.T) {
	for _, m := range []callMeta{{}, {tok: "sb-17"}, {logLevel: relayLogLevel}, {tok: "sb-17", logLevel: relayLogLevel}, {tok: `q"<&>`}} {
		var want []byte
		if meta := m.mcp(); meta != nil {
			want, _ = json.Marshal(meta)
		}
		if got := m.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%+v: appendJSON = %s, want %s", m, got, want)
		}
		if m.empty() != (m.mcp() == nil) {
			t.Errorf("%+v: empty() = %v, mcp() = %v", m, m.empty(), m.mcp())
		}
	}
}
