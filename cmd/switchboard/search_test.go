package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// "switchboard tools --search" asks GET /api/v1/tools?search=: the best
// matches of every connected server, by their servers' names, with
// scores, best first, at most --limit.
func TestToolsSearch(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	ts := testserver.Binary(t)
	d.ok(t, "server", "add", "alpha", "--command", ts, "--wait")
	d.ok(t, "server", "add", "beta", "--command", ts, "--wait")

	var hits api.ToolHits
	if err := json.Unmarshal([]byte(d.ok(t, "tools", "--search", "adds two numbers", "--limit", "3", "-o", "json").stdout), &hits); err != nil {
		t.Fatal(err)
	}
	if len(hits.Tools) != 3 || hits.Tools[0].Name != "add" || hits.Tools[1].Name != "add" ||
		hits.Tools[0].Server == hits.Tools[1].Server || hits.Tools[0].Description != "Adds two numbers." ||
		hits.Tools[0].Score < hits.Tools[2].Score || hits.Tools[2].Score <= 0 {
		t.Errorf("tools --search: %+v, want add of both servers first, then one more, with scores", hits.Tools)
	}
	table := d.ok(t, "tools", "--search", "the server's process id").stdout
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) < 3 || !strings.HasPrefix(lines[0], "TOOL") ||
		!strings.HasPrefix(lines[1], "alpha/pid") || !strings.HasPrefix(lines[2], "beta/pid") {
		t.Errorf("the table:\n%s", table)
	}
	if out := d.ok(t, "tools", "--search", "zzzz qqqq").stdout; !strings.Contains(out, `no tool matches "zzzz qqqq"`) {
		t.Errorf("no match: %q", out)
	}
	d.fail(t, []string{"--limit 0"}, "tools", "--search", "add", "--limit", "0")
	d.fail(t, []string{"give no server name"}, "tools", "alpha", "--search", "add")
}

// "switchboard stdio --toolset NAME" of a search-mode toolset lists the
// two tools, finds only what the toolset selects and calls it.
func TestStdioServesASearchModeToolset(t *testing.T) {
	ctx := context.Background()
	cs, _ := stdioToolset(t, &sb.Toolset{Name: "finder", Mode: sb.ModeSearch,
		Tools: []sb.Selector{{Server: "alpha", Tool: "echo", As: "say"}, {Server: "beta", Tool: "add"}}})
	names := toolNamesOf(t, cs)
	if !slices.Equal(names, []string{"call_tool", "search_tools"}) {
		t.Fatalf("tools %v, want exactly [call_tool search_tools]", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "adds two numbers", "limit": 10}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %+v, %v", res, err)
	}
	found := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(found, `"name":"beta__add"`) || strings.Contains(found, "alpha__add") || strings.Contains(found, "pid") {
		t.Errorf("search_tools found %s; want beta__add and nothing the toolset leaves out", found)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": args}})
		if err != nil {
			t.Fatalf("call_tool %s: %v", name, err)
		}
		return res
	}
	if res := call("beta__add", map[string]any{"a": 2, "b": 3}); res.IsError || res.Content[0].(*mcp.TextContent).Text != "5" {
		t.Errorf("call_tool beta__add: %+v", res)
	}
	if res := call("alpha__add", map[string]any{"a": 2, "b": 3}); !res.IsError {
		t.Errorf("call_tool reached the hidden alpha__add: %+v", res)
	}
}

// The MCP Inspector's CLI (scripts/inspector-setup.sh installs it) uses a
// search-mode toolset: it lists the two tools, searches, and calls what it
// found through call_tool.
func TestInspectorUsesASearchModeToolset(t *testing.T) {
	bin := os.Getenv("SWITCHBOARD_INSPECTOR_BIN")
	if bin == "" {
		const msg = "SWITCHBOARD_INSPECTOR_BIN is not set; source scripts/inspector-setup.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// The inspector's CLI sends no header: a daemon without a credential.
	d := startServe(t, daemontest.Options{NoAuth: true})
	ts := testserver.Binary(t)
	d.ok(t, "server", "add", "alpha", "--command", ts, "--wait")
	d.ok(t, "server", "add", "beta", "--command", ts, "--wait")
	d.ok(t, "toolset", "add", "finder", "--tool", "alpha/echo=say", "--tool", "beta/add", "--mode", "search")

	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"--cli", d.addr + "/toolsets/finder/mcp", "--transport", "http"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("the inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if list := inspect("--method", "tools/list"); !strings.Contains(list, `"name": "search_tools"`) || !strings.Contains(list, `"name": "call_tool"`) ||
		strings.Contains(list, `"name": "say"`) || strings.Contains(list, "beta__add") {
		t.Errorf("the inspector listed:\n%s", list)
	}
	found := inspect("--method", "tools/call", "--tool-name", "search_tools", "--tool-arg", "query=repeat my text", "--tool-arg", "limit=1")
	if !strings.Contains(found, `\"name\":\"say\"`) || strings.Contains(found, "alpha__echo") {
		t.Errorf("search_tools through the inspector:\n%s", found)
	}
	called := inspect("--method", "tools/call", "--tool-name", "call_tool", "--tool-arg", "name=beta__add", "--tool-arg", `arguments={"a":20,"b":22}`)
	if !strings.Contains(called, `"text": "42"`) {
		t.Errorf("call_tool through the inspector:\n%s", called)
	}
}
