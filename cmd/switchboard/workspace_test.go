package main

import (
	"os"
	"path/filepath"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
)

// serve gives every stdio server a sandbox workspace of its own in its
// state directory, shows it, and `server rm` removes it and only it.
func TestServerRmRemovesTheServersWorkspace(t *testing.T) {
	sandboxtest.Runtime(t) // bubblewrap works here, or a skip
	d := startServe(t, daemontest.Options{})
	servers := filepath.Join(d.configDir, "state", "switchboard", "workspaces", "servers")
	for _, name := range []string{"keeper", "goner"} {
		d.ok(t, "server", "add", name, "--command", testserver.Binary(t), "--wait")
		box := d.view(t, name).Runtime.Sandbox
		if box == nil || !box.Enabled || box.WorkspaceMode != sb.WorkspacePerServer || box.Workspace != filepath.Join(servers, name) {
			t.Fatalf("%s's sandbox %+v; want a per-server workspace at %s", name, box, filepath.Join(servers, name))
		}
		// What the server would keep there (server-memory's file).
		if err := os.WriteFile(filepath.Join(box.Workspace, "memory.jsonl"), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	contains(t, "server show", d.ok(t, "server", "show", "goner").stdout, "per-server workspace")

	d.ok(t, "server", "rm", "goner")
	if _, err := os.Stat(filepath.Join(servers, "goner")); !os.IsNotExist(err) {
		t.Errorf("server rm left the workspace: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(servers, "keeper", "memory.jsonl")); err != nil || string(b) != "keeper" {
		t.Errorf("the other server's workspace file: %q, %v", b, err)
	}
}
