package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// These tests run default-profile servers in real bubblewrap sandboxes
// through the registry, as serve does, and check whose each workspace (HOME)
// is: a server's own, kept while the server exists, gone with it.

// waitView polls name's view until ok holds, for at most a minute.
func waitView(t *testing.T, reg *registry.Registry, name, what string, ok func(sb.ServerView) bool) sb.ServerView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := reg.Get(name)
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			v.Runtime.Tools = nil
			t.Fatalf("%s: %s did not happen: %+v, %v; logs %v", name, what, v.Runtime, err, logsOf(reg, name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reconnected waits until name runs a new process (not pid) and is
// connected.
func reconnected(t *testing.T, reg *registry.Registry, name string, pid int) sb.ServerView {
	t.Helper()
	return waitView(t, reg, name, "a reconnect", func(v sb.ServerView) bool {
		return v.Runtime.Status == sb.StatusConnected && v.Runtime.PID != 0 && v.Runtime.PID != pid
	})
}

// readInHome reads file in the HOME of server's sandbox; ok is false if the
// server cannot.
func readInHome(t *testing.T, reg *registry.Registry, server, file string) (text string, ok bool) {
	t.Helper()
	s, _ := reg.Session(server)
	res, err := s.CallTool(context.Background(), "read_file", map[string]any{"path": sb.SandboxWorkspacePath + "/" + file}, sb.InvokeOptions{})
	var te *upstream.ToolError
	switch {
	case errors.As(err, &te):
		return "", false
	case err != nil:
		t.Fatalf("read_file in %s: %v", server, err)
	}
	for _, c := range res.MustDecode().Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return text, !res.IsError
}

// serverWorkspace is where rt keeps the workspace of the server name.
func serverWorkspace(rt *sandbox.Runtime, name string) string {
	return filepath.Join(rt.StateDir, "workspaces", "servers", name)
}

// A server that plants something in its HOME for the next start of a
// Python or npm server (usercustomize.py, ~/.npmrc) plants it in its own
// workspace only: another server of the same profile does not see it.
func TestServersOfOneProfileDoNotShareTheirHome(t *testing.T) {
	rt := sandboxRuntime(t)
	reg := sandboxRegistry(t, rt, probeServer(t, "planter"), probeServer(t, "victim"))
	planter := waitConnected(t, reg, "planter").Runtime.Sandbox
	victim := waitConnected(t, reg, "victim").Runtime.Sandbox
	for name, box := range map[string]*sb.SandboxInfo{"planter": planter, "victim": victim} {
		if box == nil || !box.Enabled || box.WorkspaceMode != sb.WorkspacePerServer || box.Workspace != serverWorkspace(rt, name) {
			t.Fatalf("%s's sandbox view %+v; want a per-server workspace at %s", name, box, serverWorkspace(rt, name))
		}
	}
	writeInWorkspace(t, reg, "planter", ".npmrc")
	if _, ok := readInHome(t, reg, "planter", ".npmrc"); !ok {
		t.Fatal("the planter cannot read back its own ~/.npmrc")
	}
	if text, ok := readInHome(t, reg, "victim", ".npmrc"); ok {
		t.Fatalf("another server read the planter's ~/.npmrc: %q", text)
	}
	if _, err := os.Stat(filepath.Join(victim.Workspace, ".npmrc")); !os.IsNotExist(err) {
		t.Errorf("the victim's workspace has the planted file: %v", err)
	}
}

// The per-client sessions of one server are that server's: they share its
// workspace (one client's session finds what another's wrote there), and
// no other server's.
func TestPerClientSessionsShareTheirServersWorkspace(t *testing.T) {
	rt := sandboxRuntime(t)
	cfg := probeServer(t, "notes")
	cfg.SessionScope = sb.SessionPerClient
	reg := sandboxRegistry(t, rt, cfg)
	waitConnected(t, reg, "notes")
	call := func(client, tool, path string) (*upstream.Result, error) {
		t.Helper()
		s, done, err := reg.ClientSession("notes", client)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		return s.CallTool(context.Background(), tool, map[string]any{"path": path, "text": client}, sb.InvokeOptions{})
	}
	if _, err := call("alice", "write_file", sb.SandboxWorkspacePath+"/from-alice"); err != nil {
		t.Fatal(err)
	}
	res, err := call("bob", "read_file", sb.SandboxWorkspacePath+"/from-alice")
	if err != nil || res.IsError {
		t.Fatalf("bob's session of the server cannot read what alice's wrote in its workspace: %v %+v", err, res)
	}
	if b, err := os.ReadFile(filepath.Join(serverWorkspace(rt, "notes"), "from-alice")); err != nil || string(b) != "alice" {
		t.Errorf("the server's workspace on the host: %q, %v", b, err)
	}
}

// A server's workspace is its own whatever its profile: a restart, and a
// change of its mounts, env or limits, keep it (server-memory's file
// stays), and the view names it before and after.
func TestAServersWorkspaceOutlivesRestartsAndConfigChanges(t *testing.T) {
	rt := sandboxRuntime(t)
	reg := sandboxRegistry(t, rt, probeServer(t, "memory"))
	v := waitConnected(t, reg, "memory")
	ws := v.Runtime.Sandbox.Workspace
	writeInWorkspace(t, reg, "memory", "memory.jsonl")

	if err := reg.Restart("memory"); err != nil {
		t.Fatal(err)
	}
	v = reconnected(t, reg, "memory", v.Runtime.PID)
	if text, ok := readInHome(t, reg, "memory", "memory.jsonl"); !ok || text != "live" {
		t.Fatalf("after a restart the file reads %q (ok %v)", text, ok)
	}

	data := t.TempDir()
	for _, change := range []struct {
		what string
		box  *sb.SandboxConfig
		env  map[string]string
	}{
		{"a mount added", &sb.SandboxConfig{Mounts: []sb.Mount{{Host: data, Path: "/data", Mode: sb.MountReadWrite}}}, nil},
		{"the network and a limit changed", &sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, MemoryMB: 512,
			Mounts: []sb.Mount{{Host: data, Path: "/data"}}}, map[string]string{"EXTRA": "1"}},
	} {
		cfg := probeServer(t, "memory")
		cfg.Sandbox = change.box
		for k, val := range change.env {
			cfg.Env[k] = val
		}
		if _, err := reg.Update(context.Background(), "memory", cfg, 0); err != nil {
			t.Fatalf("%s: %v", change.what, err)
		}
		v = reconnected(t, reg, "memory", v.Runtime.PID)
		if box := v.Runtime.Sandbox; box == nil || box.Workspace != ws || box.WorkspaceMode != sb.WorkspacePerServer {
			t.Errorf("%s: the sandbox view %+v; want the workspace %s", change.what, box, ws)
		}
		if text, ok := readInHome(t, reg, "memory", "memory.jsonl"); !ok || text != "live" {
			t.Fatalf("%s: the file reads %q (ok %v); the workspace did not follow the server", change.what, text, ok)
		}
	}
	// Between processes (this config makes the server exit at start) the
	// view names the workspace the next attempt will use.
	failing := probeServer(t, "memory", "-exit-at-startup", "3")
	if _, err := reg.Update(context.Background(), "memory", failing, 0); err != nil {
		t.Fatal(err)
	}
	v = waitView(t, reg, "memory", "the failed start", func(v sb.ServerView) bool { return v.Runtime.Error != nil })
	if box := v.Runtime.Sandbox; box == nil || box.Workspace != ws || box.WorkspaceMode != sb.WorkspacePerServer {
		t.Errorf("the view of the failed server: %+v; want the workspace %s", box, ws)
	}
}

// Deleting a server removes its workspace, and nothing of another's; a
// server created again under the name starts with an empty one.
func TestDeletingAServerRemovesItsWorkspace(t *testing.T) {
	rt := sandboxRuntime(t)
	reg := sandboxRegistry(t, rt, probeServer(t, "doomed"), probeServer(t, "kept"))
	ws := waitConnected(t, reg, "doomed").Runtime.Sandbox.Workspace
	waitConnected(t, reg, "kept")
	writeInWorkspace(t, reg, "doomed", "cache")
	writeInWorkspace(t, reg, "kept", "cache")

	if err := reg.Delete(context.Background(), "doomed", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("the deleted server's workspace %s is still there: %v", ws, err)
	}
	if _, err := os.Stat(filepath.Join(serverWorkspace(rt, "kept"), "cache")); err != nil {
		t.Errorf("the other server's workspace lost its file: %v", err)
	}
	if _, err := reg.Create(context.Background(), probeServer(t, "doomed")); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, reg, "doomed")
	if text, ok := readInHome(t, reg, "doomed", "cache"); ok {
		t.Errorf("the server created again found the old one's file: %q", text)
	}
}

// sandboxReplicas opens two registries on one SQLite file, as two serve
// processes on two machines would: each has its own sandbox runtime.
func sandboxReplicas(t *testing.T) (regs [2]*registry.Registry, rts [2]*sandbox.Runtime) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	for i := range regs {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rts[i] = sandboxRuntime(t)
		log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
		regs[i] = registry.New(st, &registry.Options{Logger: log, ReplicaID: string(rune('a' + i)),
			Session: upstream.Options{Sandbox: rts[i], SandboxDefault: true, HealthInterval: -1}})
		t.Cleanup(func() { regs[i].Shutdown(context.Background()) })
		if err := regs[i].Load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return regs, rts
}

// A delete made through another replica removes this replica's workspace
// of the server once its sync notices, and so does a delete followed by a
// create of the same name: that is another server.
func TestADeleteOnAnotherReplicaRemovesTheWorkspaceHere(t *testing.T) {
	regs, rts := sandboxReplicas(t)
	a, b := regs[0], regs[1]
	ctx := context.Background()
	if _, err := a.Create(ctx, probeServer(t, "shared-name")); err != nil {
		t.Fatal(err)
	}
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, b, "shared-name")
	writeInWorkspace(t, b, "shared-name", "cache")
	ws := serverWorkspace(rts[1], "shared-name")

	// Deleted and created again before this replica looked.
	if err := a.Delete(ctx, "shared-name", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, probeServer(t, "shared-name")); err != nil {
		t.Fatal(err)
	}
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, b, "shared-name")
	if text, ok := readInHome(t, b, "shared-name", "cache"); ok {
		t.Errorf("the server created again found the deleted one's file: %q", text)
	}

	// Deleted for good.
	if err := a.Delete(ctx, "shared-name", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get("shared-name"); err == nil {
		t.Fatal("the other replica still has the server")
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Dir(ws))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the deleted server's workspace %s is still there (%v): %s", ws, err, strings.Join(names, " "))
	}
}
