package upstream_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// syncBuffer is a bytes.Buffer that a logger and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An install from before per-server workspaces kept every server's files
// in its profile's shared workspace. There, a server gets an empty
// workspace of its own, and its log says where the shared ones are; a
// config that asks for "shared" finds the files where they were.
func TestAnOldInstallsSharedWorkspaceIsLeftAndNamed(t *testing.T) {
	rt := sandboxRuntime(t)
	p, _ := sandbox.Resolve(&sb.SandboxConfig{Workspace: sb.WorkspaceShared}, false)
	old := rt.Plan(p).Workspace // the default profile's workspace of before
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "memory.jsonl"), []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}

	start := func(box *sb.SandboxConfig) (*upstream.Session, *syncBuffer) {
		t.Helper()
		var logs syncBuffer
		cfg := sandboxed(t, box)
		cfg.Name = "memory"
		s := upstream.New(cfg, &upstream.Options{Sandbox: rt, HealthInterval: -1,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		if err := s.Start(context.Background()); err != nil {
			t.Fatalf("Start: %v; logs:\n%s", err, logs.String())
		}
		return s, &logs
	}
	s, logs := start(nil)
	if text, isErr := call(t, s, "read_file", map[string]any{"path": sb.SandboxWorkspacePath + "/memory.jsonl"}); !isErr {
		t.Errorf("the server's own workspace holds the shared one's file: %q", text)
	}
	if l := logs.String(); !strings.Contains(l, "shared_workspaces="+filepath.Dir(old)) || !strings.Contains(l, "workspace="+s.Info().Sandbox.Workspace) {
		t.Errorf("the log does not say where the shared workspaces are:\n%s", l)
	}
	s.Shutdown(context.Background())
	// Its next start finds its own workspace and says nothing more.
	s, logs = start(nil)
	if strings.Contains(logs.String(), "shared_workspaces") {
		t.Errorf("a later start repeats the note:\n%s", logs.String())
	}
	s.Shutdown(context.Background())

	s, _ = start(&sb.SandboxConfig{Workspace: sb.WorkspaceShared})
	if text, isErr := call(t, s, "read_file", map[string]any{"path": sb.SandboxWorkspacePath + "/memory.jsonl"}); isErr || text != "before" {
		t.Errorf(`"workspace": "shared" reads %q (error %v); want the file of before`, text, isErr)
	}
	if v := s.Info().Sandbox; v.Workspace != old || v.WorkspaceMode != sb.WorkspaceShared {
		t.Errorf("the shared server's view %+v; want the workspace %s", v, old)
	}
}
