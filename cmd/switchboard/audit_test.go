package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/store"
)

// auditLine is what the test compares of an entry.
func auditLine(e api.AuditEntry) string {
	surface := e.Surface
	if e.Toolset != "" {
		surface += ":" + e.Toolset
	}
	return fmt.Sprintf("%s %s %s %s %s%s%s%s %s", e.Principal, surface, e.Kind, e.Server, e.Tool, e.Resource, e.Prompt, e.Request, e.Outcome)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// readAudit runs "switchboard audit -o json" with args and decodes its
// lines.
func readAudit(t *testing.T, d *target, args ...string) []api.AuditEntry {
	t.Helper()
	r := d.ok(t, append([]string{"audit", "-o", "json", "--limit", "1000"}, args...)...)
	var out []api.AuditEntry
	for line := range strings.Lines(r.stdout) {
		var e api.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit -o json printed %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// Every call of every surface, and every API request that changes
// something, leaves one entry, which names who (a token's name, never its
// secret), where, what and the outcome; the entries survive a restart; the
// arguments are kept, masked, only for the server that opts in; -f shows
// a new call as it is written.
func TestAuditRecordsEveryCallOfEverySurface(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "sb.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	ts := testserver.Binary(t)
	for _, cfg := range []*sb.ServerConfig{
		{Name: "alpha", Transport: sb.TransportStdio, Command: ts, Env: map[string]string{"TOKEN": secret},
			ProtocolVersion: "2025-11-25", Audit: &sb.AuditConfig{Arguments: true}},
		{Name: "beta", Transport: sb.TransportStdio, Command: ts, ProtocolVersion: "2025-11-25"},
	} {
		if _, err := st.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.(sb.ToolsetStore).CreateToolset(ctx, &sb.Toolset{Name: "coder",
		Tools: []sb.Selector{{Server: "alpha", Tool: "echo", As: "say"}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	d := startServe(t, daemontest.Options{DB: db})
	admin := d.serve.Client(nil)
	for _, name := range []string{"alpha", "beta"} {
		waitServer(t, admin, name, name+" connected", connected)
	}
	token := strings.TrimSpace(d.ok(t, "token", "create", "ci", "--scope", "mcp").stdout)
	session := func(path, bearer string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit-test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: d.addr + path, HTTPClient: &http.Client{Transport: bearerTransport(bearer)}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	callTool := func(cs *mcp.ClientSession, name string, args map[string]any) {
		t.Helper()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
	}
	agg := session("/mcp", token)
	callTool(agg, "alpha__echo", map[string]any{"text": "hi " + secret})
	if _, err := agg.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := agg.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"name": "Ann"}}); err != nil {
		t.Fatal(err)
	}
	callTool(session("/mcp/beta", token), "echo", map[string]any{"text": "b"})
	callTool(session("/toolsets/coder/mcp", d.serve.Token), "say", map[string]any{"text": "t"})
	if _, err := admin.Call(ctx, "beta/echo", map[string]any{"text": "api"}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.RestartServer(ctx, "nope"); err == nil {
		t.Fatal("restarting a server that does not exist succeeded")
	}
	d.stop(t) // what is queued is written as serve stops

	// switchboard stdio, the local user's, on the same database.
	cmd := daemontest.Command(t, "stdio", "--db", db)
	cmd.Stderr = t.Output()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "local"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	callTool(cs, "beta__echo", map[string]any{"text": "s"})
	if err := cs.Close(); err != nil { // stdin closes: stdio writes its queue and exits
		t.Logf("closing stdio: %v", err)
	}

	d = startServe(t, daemontest.Options{DB: db})
	got := readAudit(t, d)
	var lines []string
	for _, e := range got {
		lines = append(lines, auditLine(e))
	}
	want := []string{
		"admin api api  POST /api/v1/tokens ok",
		"ci mcp tool alpha echo ok",
		"ci mcp resource alpha test://hello ok",
		"ci mcp prompt alpha greet ok",
		"ci mcp_server tool beta echo ok",
		"admin toolset:coder tool alpha echo ok",
		"admin api tool beta echo ok",
		"admin api api nope POST /api/v1/servers/nope/restart not_found",
		"local stdio tool beta echo ok",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("audit log after a restart:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range got {
		switch {
		case e.Kind == "tool" && e.Server == "alpha" && e.Surface == sb.SurfaceMCP:
			if e.ArgsSHA256 != sha(`{"text":"hi `+secret+`"}`) || string(e.Arguments) != `{"text":"hi ***"}` {
				t.Errorf("alpha's call: sha256 %s, arguments %s; want the hash of the arguments sent and them masked", e.ArgsSHA256, e.Arguments)
			}
			if e.ResultBytes == 0 || e.RequestBytes == 0 || e.DurationMS <= 0 {
				t.Errorf("alpha's call: %+v lacks sizes or duration", e)
			}
		case e.Kind == "prompt":
			if string(e.Arguments) != `{"name":"Ann"}` {
				t.Errorf("the prompt's arguments: %s", e.Arguments)
			}
		case e.Kind == "tool" && e.Server == "alpha":
			if string(e.Arguments) != `{"text":"t"}` {
				t.Errorf("%s: arguments %s, want alpha's kept", auditLine(e), e.Arguments)
			}
		case e.Kind == "tool":
			if e.Arguments != nil || e.ArgsSHA256 == "" {
				t.Errorf("%s: arguments %s, sha256 %q; beta keeps the hash only", auditLine(e), e.Arguments, e.ArgsSHA256)
			}
		}
	}
	text := d.ok(t, "audit").stdout + d.ok(t, "audit", "-o", "json").stdout
	if strings.Contains(text, secret) || strings.Contains(text, token) {
		t.Errorf("the audit log shows a secret:\n%s", text)
	}
	if ci := readAudit(t, d, "--principal", "ci", "--server", "alpha"); len(ci) != 3 {
		t.Errorf("--principal ci --server alpha: %d entries, want 3", len(ci))
	}

	// -f prints what is there, then a new call as it is written.
	follow := d.startStream(t, "audit", "-f", "-o", "json", "--server", "beta")
	follow.waitLine(t, `"surface":"stdio"`)
	admin = d.serve.Client(nil)
	waitServer(t, admin, "beta", "beta connected again", connected)
	if _, err := admin.Call(ctx, "beta/add", map[string]any{"a": 1, "b": 2}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	follow.waitLine(t, `"tool":"add"`)
	metrics := get(t, d, "/metrics")
	if !strings.Contains(metrics, "switchboard_audit_dropped_total 0") || !strings.Contains(metrics, `switchboard_audit_entries_total{result="written"} `) ||
		strings.Contains(metrics, `switchboard_audit_entries_total{result="written"} 0`) {
		t.Errorf("/metrics on the audit log:\n%s", grepLines(metrics, "switchboard_audit"))
	}
}
