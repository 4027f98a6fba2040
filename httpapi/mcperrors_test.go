package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// The MCP endpoints answer a path that names no server or toolset with a
// JSON 404, as they answer 401 and 403 (on the old code it was plain
// text); and a 401 says where the daemon's credential is, the file, never
// what it is.
func TestMCPEndpointErrorsAreJSONAndTheUnauthorizedSaysWhereTheCredentialIs(t *testing.T) {
	const file = "/home/me/.config/switchboard/token"
	e := newSecEnv(t, secOptions{token: "s3cret-credential", credentialFile: file})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, path := range []string{"/mcp/nosuch", "/mcp/nosuch/"} {
		status, hdr, body := e.do(http.MethodPost, path, init, "Accept", "application/json, text/event-stream")
		var eb api.ErrorBody
		if status != http.StatusNotFound || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") ||
			json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code != sb.CodeNotFound || !strings.Contains(eb.Error.Message, "nosuch") {
			t.Errorf("POST %s: %d %s %q; want 404 with a JSON error not_found naming the server", path, status, hdr.Get("Content-Type"), body)
		}
	}

	e.token = ""
	status, _, body := e.do(http.MethodPost, "/mcp", init, "Accept", "application/json, text/event-stream")
	var eb api.ErrorBody
	if status != http.StatusUnauthorized || json.Unmarshal([]byte(body), &eb) != nil || !strings.Contains(eb.Error.Message, "in "+file) ||
		!strings.Contains(eb.Error.Message, "Authorization: Bearer") || strings.Contains(body, "s3cret-credential") {
		t.Errorf("POST /mcp without a credential: %d %q; want a 401 naming %s", status, body, file)
	}
}
