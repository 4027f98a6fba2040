package upstream

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// A result the relay passes as bytes because they are within the cap
// (rawOutcome) is one checkResult's measure passes too: resultSize is no
// more than the result as sent, whatever its payloads hold.
func TestResultSizeIsNoMoreThanTheResultAsSent(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a\nb\"c\\d \u00e9 <&>"}]}`,
		`{"content":[],"structuredContent":{"html":"<<<<&&&&>>>>","n":[1,2.5,-3e2],"ok":true,"nil":null}}`,
		`{"content":[{"type":"text","text":"x"}], "structuredContent": { "a" : { "b" : [ "<a href=\"x\">" ] } } }`,
		`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}],"structuredContent":{"big":12345678901234567890}}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"<tag>"}}],"isError":true}`,
	} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if n := resultSize(&res); n > len(raw) {
			t.Errorf("resultSize = %d, more than the %d bytes sent: %s", n, len(raw), raw)
		}
	}
}
