package registry_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// These tests run real bubblewrap sandboxes through the registry, as serve
// does (the default profile applied to servers without a sandbox field).
// Without bwrap they skip, unless SWITCHBOARD_SANDBOX_REQUIRED is set (by
// scripts/sandbox-setup.sh, which scripts/test.sh sources).

// sandboxRuntime is sandboxtest.Runtime: bubblewrap that works, or a skip.
func sandboxRuntime(t *testing.T) *sandbox.Runtime { return sandboxtest.Runtime(t) }

// sandboxRegistry loads servers into a registry that applies the default
// sandbox profile, with its workspaces under rt.
func sandboxRegistry(t *testing.T, rt *sandbox.Runtime, servers ...*sb.ServerConfig) *registry.Registry {
	t.Helper()
	st := sqlitetest.Store(t, servers...)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := registry.New(st, &registry.Options{Logger: log,
		Session: upstream.Options{Sandbox: rt, SandboxDefault: true, HealthInterval: -1}})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Shutdown(context.Background()) })
	return reg
}

// probeServer is the test server with its probe tools and no sandbox field:
// the default profile applies.
func probeServer(t *testing.T, name string, args ...string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: args,
		Env: map[string]string{testserver.ProbesEnv: "1"}, ProtocolVersion: "2025-11-25"}
}

func waitConnected(t *testing.T, reg *registry.Registry, name string) sb.ServerView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := reg.Get(name)
		if err == nil && v.Runtime.Status == sb.StatusConnected {
			return v
		}
		if time.Now().After(deadline) {
			v.Runtime.Tools = nil
			t.Fatalf("%s did not connect: %+v; logs %v", name, v.Runtime, logsOf(reg, name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logsOf(reg *registry.Registry, name string) []string {
	l, _ := reg.Logs(name)
	return l
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func writeInWorkspace(t *testing.T, reg *registry.Registry, server, file string) {
	t.Helper()
	s, _ := reg.Session(server)
	if _, err := s.CallTool(context.Background(), "write_file",
		map[string]any{"path": sb.SandboxWorkspacePath + "/" + file, "text": "live"}, sb.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestTestSessionRunsInAFreshIsolatedWorkspaceAndLeavesNothing(t *testing.T) {
	rt := sandboxRuntime(t)
	reg := sandboxRegistry(t, rt, probeServer(t, "live"))
	live := waitConnected(t, reg, "live").Runtime.Sandbox
	if live == nil || !live.Enabled || live.WorkspaceMode != sb.WorkspacePerServer {
		t.Fatalf("the live server's sandbox %+v; want the default profile in a workspace of its own", live)
	}
	writeInWorkspace(t, reg, "live", "cache")
	before := listDir(t, live.Workspace)

	res, err := reg.Test(context.Background(), "live")
	if err != nil {
		t.Fatal(err)
	}
	box := res.Runtime.Sandbox
	if res.Runtime.Status != sb.StatusConnected || box == nil || !box.Enabled || box.WorkspaceMode != sb.WorkspaceIsolated ||
		box.Workspace == live.Workspace || box.Workspace == "" {
		t.Fatalf("test session: status %s, sandbox %+v; want connected in an isolated workspace other than %s",
			res.Runtime.Status, box, live.Workspace)
	}
	if _, err := os.Stat(box.Workspace); !os.IsNotExist(err) {
		t.Errorf("the test session's workspace %s is still there: %v", box.Workspace, err)
	}
	if left := listDir(t, filepath.Join(rt.StateDir, "workspaces", "isolated")); len(left) != 0 {
		t.Errorf("isolated workspaces left behind: %v", left)
	}
	if after := listDir(t, live.Workspace); !slices.Equal(before, after) {
		t.Errorf("the live server's workspace changed from %v to %v", before, after)
	}
	// A draft that is not stored is tested the same way.
	draft := probeServer(t, "draft", "-tools", "2")
	if res, err := reg.TestConfig(context.Background(), draft); err != nil || res.Runtime.Sandbox == nil ||
		res.Runtime.Sandbox.WorkspaceMode != sb.WorkspaceIsolated {
		t.Errorf("draft test: %+v, %v", res.Runtime.Sandbox, err)
	}
}

func TestAFailingTestSessionDoesNotDisturbTheLiveServer(t *testing.T) {
	rt := sandboxRuntime(t)
	reg := sandboxRegistry(t, rt, probeServer(t, "live"))
	v := waitConnected(t, reg, "live")
	writeInWorkspace(t, reg, "live", "cache")

	for _, args := range [][]string{{"-exit-at-startup", "3"}, {"-malformed"}, {"-spawn-child", "-hang-initialize"}} {
		draft := probeServer(t, "live", args...)
		draft.StartupTimeoutMS = 2000
		res, err := reg.TestConfig(context.Background(), draft)
		if err != nil || (res.Runtime.Error == nil && !res.Runtime.StartupTimedOut) {
			t.Fatalf("draft %v: %+v, %v; want a failed test", args, res.Runtime.Error, err)
		}
	}
	after := waitConnected(t, reg, "live")
	if after.Runtime.PID != v.Runtime.PID || after.Runtime.Reconnects != 0 || after.Runtime.Error != nil {
		t.Errorf("the live server was disturbed: pid %d -> %d, reconnects %d, error %+v",
			v.Runtime.PID, after.Runtime.PID, after.Runtime.Reconnects, after.Runtime.Error)
	}
	if got := listDir(t, v.Runtime.Sandbox.Workspace); !slices.Equal(got, []string{"cache"}) {
		t.Errorf("the live server's workspace holds %v, want just its own file", got)
	}
	s, _ := reg.Session("live")
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "still here"}, sb.InvokeOptions{}); err != nil {
		t.Errorf("the live server after the failed tests: %v", err)
	}
}

// npmServers returns the directory the sandbox setup installed the npm
// servers into, or skips.
func npmServers(t *testing.T) string {
	dir := os.Getenv("SWITCHBOARD_SANDBOX_NPM")
	if dir == "" {
		if os.Getenv("SWITCHBOARD_SANDBOX_REQUIRED") != "" {
			t.Fatal("SWITCHBOARD_SANDBOX_NPM is not set: source scripts/sandbox-setup.sh")
		}
		t.Skip("SWITCHBOARD_SANDBOX_NPM is not set: source scripts/sandbox-setup.sh")
	}
	return dir
}

// nodeEnv passes what node needs from this environment to reach the
// network through a TLS-inspecting proxy, as a config would name it.
func nodeEnv(env map[string]string) map[string]string {
	for _, k := range []string{"NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	return env
}

// The real npm servers, with the default profile (plus a mount for the
// filesystem server), through the gateway's /mcp.
func TestNPMServersWorkSandboxedThroughMCP(t *testing.T) {
	rt := sandboxRuntime(t)
	npm := npmServers(t)
	modules := filepath.Join(npm, "node_modules", "@modelcontextprotocol")
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The servers write there (as root, they run as the sandbox user).
	sandboxtest.GiveToServers(t, rt, data)
	// The servers' code is a host directory like any other: mounted
	// read-only, at its own path.
	code := sb.Mount{Host: npm}
	memory := &sb.ServerConfig{Name: "memory", Transport: sb.TransportStdio, Command: "node",
		Args: []string{filepath.Join(modules, "server-memory", "dist", "index.js")},
		Env:  nodeEnv(map[string]string{"MEMORY_FILE_PATH": sb.SandboxWorkspacePath + "/memory.jsonl"}),
		// The default profile, named for its mount.
		Sandbox: &sb.SandboxConfig{Mounts: []sb.Mount{code}}}
	files := &sb.ServerConfig{Name: "files", Transport: sb.TransportStdio, Command: "node",
		Args: []string{filepath.Join(modules, "server-filesystem", "dist", "index.js"), "/data"},
		Env:  nodeEnv(map[string]string{}),
		Sandbox: &sb.SandboxConfig{Mounts: []sb.Mount{code,
			{Host: data, Path: "/data", Mode: sb.MountReadWrite}}}}
	reg := sandboxRegistry(t, rt, memory, files)
	for _, name := range []string{"memory", "files"} {
		if v := waitConnected(t, reg, name); v.Runtime.Sandbox == nil || !v.Runtime.Sandbox.Enabled {
			t.Fatalf("%s runs unsandboxed: %+v", name, v.Runtime.Sandbox)
		}
	}

	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ex := executor.New(executor.NewMCP(reg))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: log})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Logger: log, MCP: gw.Handler()}))
	httpc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		httpc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
	})
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s: tool error %s", tool, text.String())
		}
		return text.String()
	}

	call("memory__create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "switchboard", "entityType": "project", "observations": []any{"runs servers in bubblewrap"}}}})
	if graph := call("memory__read_graph", map[string]any{}); !strings.Contains(graph, "runs servers in bubblewrap") {
		t.Errorf("read_graph = %s", graph)
	}
	// The memory file is in the server's workspace, not in its (read-only) code.
	ws := waitConnected(t, reg, "memory").Runtime.Sandbox.Workspace
	if _, err := os.Stat(filepath.Join(ws, "memory.jsonl")); err != nil {
		t.Errorf("the memory file is not in the workspace %s: %v", ws, err)
	}

	if text := call("files__read_text_file", map[string]any{"path": "/data/hello.txt"}); !strings.Contains(text, "hello from the host") {
		t.Errorf("read_text_file = %q", text)
	}
	call("files__write_file", map[string]any{"path": "/data/from-sandbox.txt", "content": "written inside"})
	if b, err := os.ReadFile(filepath.Join(data, "from-sandbox.txt")); err != nil || string(b) != "written inside" {
		t.Errorf("the file written through the mount: %q, %v", b, err)
	}
	// Outside its mount the filesystem server sees nothing of the host.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__list_allowed_directories", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_allowed_directories: %v %+v", err, res)
	}
}
