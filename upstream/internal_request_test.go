package upstream

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// A request sent again with a caller's answers has them in place of the
// round before's, and keeps the rest of its params.
func TestWithMembersReplacesTheAnswers(t *testing.T) {
	in := &sb.InputRound{Responses: json.RawMessage(`{"a":{"action":"accept"}}`), State: "new"}
	got := withMembers(json.RawMessage(`{"uri":"test://x","requestState":"old","inputResponses":{"b":{}}}`), inputMembers(in))
	var p struct {
		URI            string                     `json:"uri"`
		RequestState   string                     `json:"requestState"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(got, &p); err != nil || p.URI != "test://x" || p.RequestState != "new" ||
		len(p.InputResponses) != 1 || p.InputResponses["a"] == nil {
		t.Errorf("params %s (%v); want the uri, requestState new and only the answer a", got, err)
	}
}

// A 2025-11-25 client's request to a 2026-07-28 link gets the link's
// _meta members, and keeps its own, of the same names too.
func TestWithLinkMetaAddsTheLinksMembers(t *testing.T) {
	meta := requestMeta("2026-07-28", &mcp.Implementation{Name: "switchboard", Version: "1"})
	got := withLinkMeta(json.RawMessage(`{"uri":"test://x","_meta":{"k":1,"io.modelcontextprotocol/protocolVersion":"mine"}}`), meta)
	var p struct {
		URI  string                     `json:"uri"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(got, &p); err != nil || p.URI != "test://x" || string(p.Meta["k"]) != "1" ||
		string(p.Meta[mcp.MetaKeyProtocolVersion]) != `"mine"` || p.Meta[mcp.MetaKeyClientInfo] == nil || p.Meta[mcp.MetaKeyClientCapabilities] == nil {
		t.Errorf("params %s (%v); want the caller's _meta with the link's clientInfo and capabilities added", got, err)
	}
	if got := withLinkMeta(json.RawMessage(`{"uri":"test://x"}`), nil); string(got) != `{"uri":"test://x"}` {
		t.Errorf("on an older link: %s; want the params as they were", got)
	}
}
