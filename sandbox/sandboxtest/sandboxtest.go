// Package sandboxtest gives tests a working bubblewrap sandbox runtime.
package sandboxtest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-mcp/switchboard/sandbox"
)

// Runtime returns a sandbox.Runtime whose workspaces live in a temporary
// directory, after checking that bubblewrap works here. Without it the test
// skips, unless SWITCHBOARD_SANDBOX_REQUIRED is set (scripts/sandbox-setup.sh
// sets it, so the test command never skips them), when it fails.
func Runtime(t *testing.T) *sandbox.Runtime {
	t.Helper()
	rt := &sandbox.Runtime{StateDir: t.TempDir()}
	if _, err := rt.Probe(context.Background()); err != nil {
		if os.Getenv("SWITCHBOARD_SANDBOX_REQUIRED") != "" {
			t.Fatalf("bubblewrap is required (SWITCHBOARD_SANDBOX_REQUIRED) and does not work: %v", err)
		}
		t.Skipf("bubblewrap does not work here: %v", err)
	}
	return rt
}

// GiveToServers makes the host paths, and everything below them, the
// sandboxed servers' of rt, as a person running Switchboard as root must
// for a mount whose files the servers read or write: a root Switchboard
// runs them as an unprivileged user (sandbox.DefaultUser). Otherwise the
// servers run as the test's own user, and nothing changes.
func GiveToServers(t *testing.T, rt *sandbox.Runtime, paths ...string) {
	t.Helper()
	c, err := rt.User()
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || int(c.Uid) == os.Getuid() {
		return
	}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(c.Uid), int(c.Gid))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// GiveToServeServers is GiveToServers for the servers of a `switchboard
// serve` the test runs: as root, serve runs them as sandbox.DefaultUser,
// which it creates if missing (and so does this).
func GiveToServeServers(t *testing.T, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	c, err := sandbox.LookupUser(sandbox.DefaultUser, true)
	if err != nil {
		t.Fatal(err)
	}
	GiveToServers(t, &sandbox.Runtime{Credential: c}, paths...)
}
