package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file keeps the workspaces: the one writable directory of a
// sandbox, which is also its HOME, so that npx and uvx find a cache there.
// Under StateDir/workspaces:
//
//	servers/<name>/          a server's own (sb.WorkspacePerServer, the default)
//	<profile>/               a profile's, shared by its servers (sb.WorkspaceShared)
//	isolated/<pid>-<random>/ one process's (sb.WorkspaceIsolated)
//
// A server's own workspace outlives its processes and its config changes
// (the second start of an npx server is fast, server-memory's file stays)
// and goes when the server is deleted (RemoveWorkspace). It is keyed by the
// name alone because whatever else the workspace were keyed by could
// change under the server: a mount, a limit. Nothing writable is shared
// between two servers unless their configs say "shared": HOME holds what
// the next start executes (~/.local/lib/python3.X/site-packages/
// usercustomize.py, ~/.npmrc, ~/.npm/_npx), so a workspace two servers
// share lets each run code in the other with the other's secrets.
//
// A shared workspace belongs to a profile and outlives its servers. Before
// servers had workspaces of their own, every server's workspace was its
// profile's; those directories are left as they are (Launch.Legacy tells
// where they are when a server first gets its own).

// serversDir is the directory of the servers' own workspaces under
// StateDir/workspaces. Profile keys are 16 hex digits and "isolated" is
// not one, so no server name can meet another kind of workspace.
const serversDir = "servers"

// workspace is the workspace of one launch.
type workspace struct {
	dir      string // on the host
	isolated bool
	// legacy is the directory of the shared workspaces, when this launch
	// created the server's own workspace and shared ones are kept there.
	legacy string
}

// workspaceRoot returns StateDir/workspaces.
func (rt *Runtime) workspaceRoot() (string, error) {
	state, err := rt.stateDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the sandbox workspaces (set XDG_STATE_HOME or HOME): %w", err)
	}
	return filepath.Join(state, "workspaces"), nil
}

// workspaceDir returns the host directory of p's workspace, without
// creating it, for every mode but isolated (whose name is random).
func (rt *Runtime) workspaceDir(p Profile) (string, error) {
	root, err := rt.workspaceRoot()
	if err != nil {
		return "", err
	}
	switch p.Workspace {
	case sb.WorkspaceShared:
		return filepath.Join(root, p.key()), nil
	case sb.WorkspacePerServer:
		return serverDir(root, p.Server)
	}
	return "", fmt.Errorf("a workspace of mode %q has no fixed directory", p.Workspace)
}

// serverDir returns the directory of the server's own workspace under
// root. The name becomes a path, so it must be a server name: nothing
// that could climb out (.., /) or name another server's.
func serverDir(root, server string) (string, error) {
	if !sb.IsName(server) {
		return "", fmt.Errorf("the workspace of a server needs a valid server name, not %q", server)
	}
	return filepath.Join(root, serversDir, server), nil
}

// workspace creates (or finds) the workspace a launch of p uses.
func (rt *Runtime) workspace(p Profile) (workspace, error) {
	root, err := rt.workspaceRoot()
	if err != nil {
		return workspace{}, err
	}
	if err := rt.parentDir(root); err != nil {
		return workspace{}, fmt.Errorf("creating %s: %w", root, err)
	}
	if p.Workspace != sb.WorkspaceIsolated {
		dir, err := rt.workspaceDir(p)
		if err != nil {
			return workspace{}, err
		}
		if p.Workspace == sb.WorkspacePerServer {
			if err := rt.parentDir(filepath.Dir(dir)); err != nil {
				return workspace{}, fmt.Errorf("creating %s: %w", filepath.Dir(dir), err)
			}
		}
		_, statErr := os.Lstat(dir)
		if err := rt.mkdir(dir); err != nil {
			return workspace{}, fmt.Errorf("creating the workspace %s: %w", dir, err)
		}
		ws := workspace{dir: dir}
		if p.Workspace == sb.WorkspacePerServer && errors.Is(statErr, fs.ErrNotExist) && hasShared(root) {
			ws.legacy = root
		}
		return ws, nil
	}
	parent := filepath.Join(root, "isolated")
	if err := rt.parentDir(parent); err != nil {
		return workspace{}, fmt.Errorf("creating %s: %w", parent, err)
	}
	rt.sweepOnce.Do(func() { sweepIsolated(parent) })
	// The daemon's pid in the name lets a later daemon remove what a
	// crashed one left.
	dir, err := os.MkdirTemp(parent, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return workspace{}, fmt.Errorf("creating an isolated workspace in %s: %w", parent, err)
	}
	if err := rt.own(dir); err != nil {
		removeAll(dir)
		return workspace{}, err
	}
	return workspace{dir: dir, isolated: true}, nil
}

// hasShared reports whether root holds a profile's shared workspace.
func hasShared(root string) bool {
	entries, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && isProfileKey(e.Name()) {
			return true
		}
	}
	return false
}

// isProfileKey reports whether name is a key as Profile.key makes them.
func isProfileKey(name string) bool {
	if len(name) != 16 {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RemoveWorkspace removes the workspace of the server named server (its
// own: sb.WorkspacePerServer), with everything in it; a server that has
// none is no error. Call it when the server is deleted, once none of its
// processes runs: one still running would go on writing into a directory
// that is gone, and a server created again under the name would find the
// old one's files.
func (rt *Runtime) RemoveWorkspace(server string) error {
	root, err := rt.workspaceRoot()
	if err != nil {
		return err
	}
	dir, err := serverDir(root, server)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	removeAll(dir)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("the workspace %s could not be removed entirely", dir)
	}
	return nil
}

// mkdir creates dir, 0700 and owned by the sandbox's user, and its
// missing parents, 0700 and Switchboard's.
func (rt *Runtime) mkdir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return rt.adopt(dir)
		}
		return err
	}
	return rt.own(dir)
}

// parentDir creates dir, a directory that holds workspaces, 0700: as
// Switchboard's when bubblewrap runs as Switchboard (only the workspaces
// in it are the sandbox user's, so that no other user of the host reaches
// them), as the sandbox user's when bubblewrap runs as that user, who
// must reach its workspace.
func (rt *Runtime) parentDir(dir string) error {
	c, _, err := rt.user()
	if err != nil {
		return err
	}
	if c == nil || rt.dropsPrivileges(c) {
		return os.MkdirAll(dir, 0o700)
	}
	return rt.mkdir(dir)
}

// adopt gives an existing workspace, and everything in it, to the sandbox
// user if it is not already its: one made before a root Switchboard ran
// its servers as an unprivileged user (a package cache, server-memory's
// file) would otherwise be root's, and the server could not use its own
// HOME.
func (rt *Runtime) adopt(dir string) error {
	c, _, err := rt.user()
	if err != nil || c == nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == c.Uid && st.Gid == c.Gid {
		return nil
	}
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.Uid), int(c.Gid))
	})
	if err != nil {
		return fmt.Errorf("giving the workspace %s to uid %d: %w", dir, c.Uid, err)
	}
	return rt.own(dir)
}

// own gives dir to the sandbox's user, when that is not Switchboard's.
func (rt *Runtime) own(dir string) error {
	c, _, err := rt.user()
	if err != nil {
		return err
	}
	if c == nil {
		return nil
	}
	if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
		return fmt.Errorf("giving %s to uid %d: %w", dir, c.Uid, err)
	}
	if rt.dropsPrivileges(c) {
		// A root bwrap enters the workspace (--chdir) after dropping its
		// capabilities, as a root that is not the owner: it needs the
		// search bit. The directories above it are root's 0700, so no
		// other user of the host gets that far.
		if err := os.Chmod(dir, 0o701); err != nil {
			return fmt.Errorf("opening %s to bubblewrap: %w", dir, err)
		}
	}
	return nil
}

// remove deletes an isolated workspace; a server's own and a shared one
// stay.
func (w workspace) remove() {
	if w.isolated {
		removeAll(w.dir)
	}
}

// sweepIsolated removes the isolated workspaces in parent whose daemon is
// gone: a process that crashed could not remove its own.
func sweepIsolated(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pidText, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			removeAll(filepath.Join(parent, e.Name()))
		}
	}
}

// removeAll is os.RemoveAll that also removes what a server made
// read-only (a package cache may hold directories without write
// permission, whose entries cannot be unlinked until it is restored).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
