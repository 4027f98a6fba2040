package upstream_test

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// TestSessionsShareToolBytes: two sessions to servers that list the same
// tools keep one copy of each description and schema between them.
func TestSessionsShareToolBytes(t *testing.T) {
	a, b := inProcess(t, testserver.Options{}).Tools(), inProcess(t, testserver.Options{}).Tools()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("tools: %d and %d, want the same non-zero number", len(a), len(b))
	}
	for i := range a {
		ta, tb := a[i], b[i]
		if ta == tb {
			t.Fatalf("%s: both sessions hold the same *mcp.Tool; want separate catalogs", ta.Name)
		}
		if ta.Description != "" && unsafe.StringData(ta.Description) != unsafe.StringData(tb.Description) {
			t.Errorf("%s: the description is kept twice", ta.Name)
		}
		sa, sb := ta.InputSchema.(json.RawMessage), tb.InputSchema.(json.RawMessage)
		if string(sa) != string(sb) || len(sa) == 0 || &sa[0] != &sb[0] {
			t.Errorf("%s: the input schema is kept twice (%s, %s)", ta.Name, sa, sb)
		}
	}
}
