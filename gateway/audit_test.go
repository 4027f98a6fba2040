package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
)

// auditLog is an audit log on a store of its own; entries returns what it
// recorded, once the log has written its queue (it records no more).
func auditLog(t *testing.T) (*audit.Log, func() []sb.AuditEntry) {
	t.Helper()
	st := sqlitetest.Store(t)
	l := audit.New(audit.Options{Store: st})
	return l, func() []sb.AuditEntry {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l.Run(ctx) // writes what is queued, and returns
		es, err := st.ListAudit(context.Background(), sb.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
}

// A call that fails before any upstream is reached leaves an entry with
// its failure's code, as one the upstream answers does: a tool or prompt
// /mcp does not show (refused by the go-sdk's server), and an API call of
// an unknown server or a malformed address (refused by the executor).
func TestEveryCallAttemptLeavesAnAuditEntry(t *testing.T) {
	l, entries := auditLog(t)
	e := newEnvWith(t, gateway.Options{ResyncInterval: time.Second, Audit: l}, stdio(t, "local"))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "local__echo")
	ctx := context.Background()

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__nosuch", Arguments: map[string]any{"a": 1}}); err == nil {
		t.Error("a call of a tool /mcp does not show succeeded")
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "local__nosuch"}); err == nil {
		t.Error("a get of a prompt /mcp does not show succeeded")
	}
	if got := text(t)(cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__echo", Arguments: map[string]any{"text": "hi"}})); got != "hi" {
		t.Errorf("local__echo answered %q", got)
	}
	for _, body := range []string{`{"tool":"nosuch/echo","arguments":{}}`, `{"tool":"noslash"}`} {
		resp, err := http.Post(e.url+"/api/v1/call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST /api/v1/call %s: %s, want a failure", body, resp.Status)
		}
	}
	cs.Close()

	type key struct{ surface, kind, server, name, outcome string }
	var got []key
	for _, en := range entries() {
		got = append(got, key{en.Surface, string(en.Kind), en.Server, en.Name, en.Outcome})
	}
	want := []key{
		{sb.SurfaceMCP, string(sb.AuditTool), "", "local__nosuch", string(sb.CodeUnknownTool)},
		{sb.SurfaceMCP, string(sb.AuditPrompt), "", "local__nosuch", string(sb.CodeNotFound)},
		{sb.SurfaceMCP, string(sb.AuditTool), "local", "echo", "ok"},
		{sb.SurfaceAPI, string(sb.AuditTool), "nosuch", "echo", string(sb.CodeUnknownServer)},
		{sb.SurfaceAPI, string(sb.AuditTool), "", "noslash", string(sb.CodeBadAddress)},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
