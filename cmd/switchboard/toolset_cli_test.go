package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// bearerTransport sends a token on every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// toolNames lists a session's tools, waiting (bounded) until want shows.
func toolNames(t *testing.T, cs *mcp.ClientSession, want string) []string {
	t.Helper()
	var names []string
	for range 200 {
		names = names[:0]
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if slices.Contains(names, want) {
			return names
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("tools %v, want %s", names, want)
	return nil
}

// The toolset and token verbs, end to end: a toolset made with the CLI is
// served at /toolsets/NAME/mcp to a token made with the CLI, whose use
// shows in "token list", and "token revoke" shuts it out.
func TestToolsetAndTokenVerbs(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	ts := testserver.Binary(t)
	d.ok(t, "server", "add", "alpha", "--command", ts, "--wait")
	d.ok(t, "server", "add", "beta", "--command", ts, "--wait")
	d.fail(t, []string{"invalid_config", "tools[1].as"}, "toolset", "add", "bad", "--tool", "alpha/echo=x", "--tool", "beta/echo=x")
	d.ok(t, "toolset", "add", "coder", "--tool", "alpha/echo=say", "--tool", "beta/add")
	if r := d.ok(t, "toolset", "list", "-o", "wide"); !strings.Contains(r.stdout, "alpha/echo=say,beta/add") {
		t.Errorf("toolset list -o wide: %s", r)
	}
	// "show" prints the file "update -f" takes back, its selectors naming
	// their item in "tool"; the spelling "name" is refused.
	shown := d.ok(t, "toolset", "show", "coder").stdout
	if !strings.Contains(shown, `"tool": "echo"`) || strings.Contains(shown, `"name": "echo"`) {
		t.Errorf("toolset show: %s", shown)
	}
	file := filepath.Join(t.TempDir(), "coder.json")
	if err := os.WriteFile(file, []byte(shown), 0o600); err != nil {
		t.Fatal(err)
	}
	d.ok(t, "toolset", "update", "coder", "-f", file)
	if err := os.WriteFile(file, []byte(`{"tools": [{"server": "alpha", "name": "echo"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d.fail(t, []string{`unknown field "name"`}, "toolset", "update", "coder", "-f", file)
	secret := strings.TrimSpace(d.ok(t, "token", "create", "coder-bot", "--scope", "toolset:coder").stdout)
	if r := d.ok(t, "__complete", "toolset", "rm", ""); !strings.Contains(r.stdout, "coder") {
		t.Errorf("completing a toolset name: %s", r)
	}
	if r := d.ok(t, "__complete", "token", "revoke", ""); !strings.Contains(r.stdout, "coder-bot\ttoolset:coder") {
		t.Errorf("completing a token name: %s", r)
	}
	if !strings.HasPrefix(secret, sb.TokenPrefix) {
		t.Fatalf("token create printed %q, want the secret", secret)
	}
	if r := d.ok(t, "token", "list"); !strings.Contains(r.stdout, "coder-bot") || !strings.Contains(r.stdout, "toolset:coder") ||
		!strings.Contains(r.stdout, "never") || strings.Contains(r.stdout, secret) {
		t.Errorf("token list before use: %s", r)
	}

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "coder"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: d.addr + "/toolsets/coder/mcp", HTTPClient: &http.Client{Transport: bearerTransport(secret)}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := toolNames(t, cs, "say")
	slices.Sort(names)
	if !slices.Equal(names, []string{"beta__add", "say"}) {
		t.Errorf("tools %v, want exactly [beta__add say]", names)
	}
	for range 100 {
		if r := d.ok(t, "token", "list"); !strings.Contains(r.stdout, "never") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := d.ok(t, "token", "list"); strings.Contains(r.stdout, "never") || !strings.Contains(r.stdout, "ago") {
		t.Errorf("token list after use: %s", r)
	}

	// Calls are counted by the token's name, and the secret is nowhere.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	metrics := get(t, d, "/metrics")
	if !strings.Contains(metrics, `switchboard_token_calls_total{outcome="ok",token="coder-bot"} 1`) {
		t.Errorf("no call of coder-bot counted:\n%s", grepLines(metrics, "switchboard_token_calls_total"))
	}
	if strings.Contains(metrics, secret) || strings.Contains(d.serve.Logs(), secret) {
		t.Error("the token's secret is in the metrics or the daemon's log")
	}

	d.ok(t, "token", "revoke", "coder-bot")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("a revoked token's session could still call")
	}
	d.fail(t, []string{"not_found"}, "token", "revoke", "coder-bot")
	d.ok(t, "toolset", "rm", "coder")
	d.fail(t, []string{"not_found"}, "toolset", "show", "coder")
}

// get fetches path from the daemon with its admin credential.
func get(t *testing.T, d *target, path string) string {
	t.Helper()
	resp, err := (&http.Client{Transport: d.serve.Transport(nil)}).Get(d.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return string(body)
}

func grepLines(text, substr string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// The MCP Inspector's CLI (scripts/inspector-setup.sh installs it) lists
// a toolset's tools, and only them.
func TestInspectorListsAToolset(t *testing.T) {
	bin := os.Getenv("SWITCHBOARD_INSPECTOR_BIN")
	if bin == "" {
		const msg = "SWITCHBOARD_INSPECTOR_BIN is not set; source scripts/inspector-setup.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// The inspector's CLI sends no header: a daemon without a credential,
	// where the toolset's endpoint is open (the scoping is that of the
	// toolset, which is what this test is about).
	d := startServe(t, daemontest.Options{NoAuth: true})
	ts := testserver.Binary(t)
	d.ok(t, "server", "add", "alpha", "--command", ts, "--wait")
	d.ok(t, "server", "add", "beta", "--command", ts, "--wait")
	d.ok(t, "toolset", "add", "coder", "--tool", "alpha/echo=say", "--tool", "beta/add")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--cli", d.addr+"/toolsets/coder/mcp", "--transport", "http", "--method", "tools/list")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the inspector: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, `"name": "say"`) || !strings.Contains(text, `"name": "beta__add"`) ||
		strings.Contains(text, "alpha__echo") || strings.Contains(text, "beta__echo") {
		t.Errorf("the inspector listed:\n%s", text)
	}
}

// client-config --toolset points a client at one toolset: over HTTP with
// a token of that toolset (never the daemon's own credential, which
// reaches everything), and for Claude Desktop through "stdio --toolset".
// The snippet works: a client that follows it lists the toolset's tools.
func TestClientConfigOfAToolset(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	d.ok(t, "server", "add", "alpha", "--command", testserver.Binary(t), "--wait")
	d.ok(t, "toolset", "add", "coder", "--tool", "alpha/echo=say")
	secret := strings.TrimSpace(d.ok(t, "token", "create", "coder-bot", "--scope", "toolset:coder").stdout)

	d.fail(t, []string{"--toolset coder", "token create AGENT --scope toolset:coder"}, "client-config", "claude-code", "--toolset", "coder")
	d.fail(t, []string{"not a toolset name"}, "client-config", "claude-code", "--toolset", "../x", "--token", secret)
	d.fail(t, []string{"the daemon's own credential"}, "client-config", "claude-code", "--toolset", "coder", "--token", d.serve.Token)
	r := d.ok(t, "client-config", "claude-code", "--toolset", "coder", "--token", secret)
	var cfg struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cfg); err != nil {
		t.Fatalf("client-config --toolset is not JSON: %v\n%s", err, r.stdout)
	}
	s, ok := cfg.MCPServers["switchboard-coder"]
	if !ok || s.URL != d.addr+"/toolsets/coder/mcp" || s.Headers["Authorization"] != "Bearer "+secret || strings.Contains(r.stdout, d.serve.Token) {
		t.Fatalf("client-config claude-code --toolset coder: %s", r.stdout)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "coder"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: s.URL, HTTPClient: &http.Client{Transport: headerTransport{"Authorization", s.Headers["Authorization"]}}}, nil)
	if err != nil {
		t.Fatalf("connecting as the snippet says: %v", err)
	}
	defer cs.Close()
	if names := toolNames(t, cs, "say"); !slices.Equal(names, []string{"say"}) {
		t.Errorf("tools %v through the snippet, want [say]", names)
	}

	db := filepath.Join(t.TempDir(), "switchboard.db") // client-config claude refuses a database that is not there
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = d.ok(t, "client-config", "claude", "--db", "sqlite:"+db, "--toolset", "coder")
	var claude struct {
		MCPServers map[string]struct {
			Args []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &claude); err != nil {
		t.Fatalf("client-config claude --toolset is not JSON: %v\n%s", err, r.stdout)
	}
	if args := claude.MCPServers["switchboard-coder"].Args; !slices.Equal(args, []string{"stdio", "--toolset", "coder"}) {
		t.Errorf("client-config claude --toolset coder: %s", r.stdout)
	}
}
