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
)

// This file keeps the workspaces: the one writable directory of a
// sandbox, which is also its HOME, so that npx and uvx find a cache there.
// A shared workspace belongs to a profile and outlives its servers (the
// second start of an npx server is fast); an isolated one belongs to one
// process and is removed with it.

// workspace is the workspace of one launch.
type workspace struct {
	dir      string // on the host
	isolated bool
}

// workspace creates (or finds) the workspace a launch of p uses.
func (rt *Runtime) workspace(p Profile) (workspace, error) {
	state, err := rt.stateDir()
	if err != nil {
		return workspace{}, fmt.Errorf("no directory for the sandbox workspaces (set XDG_STATE_HOME or HOME): %w", err)
	}
	root := filepath.Join(state, "workspaces")
	// Switchboard's, 0700: only the workspaces in it are the sandbox
	// user's, so that no other user of the host reaches them.
	if err := os.MkdirAll(root, 0o700); err != nil {
		return workspace{}, fmt.Errorf("creating %s: %w", root, err)
	}
	if !p.Isolated {
		dir := filepath.Join(root, p.key())
		if err := rt.mkdir(dir); err != nil {
			return workspace{}, fmt.Errorf("creating the workspace %s: %w", dir, err)
		}
		return workspace{dir: dir}, nil
	}
	parent := filepath.Join(root, "isolated")
	if err := os.MkdirAll(parent, 0o700); err != nil {
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

// mkdir creates dir, 0700 and owned by the sandbox's user, and its
// missing parents, 0700 and Switchboard's.
func (rt *Runtime) mkdir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
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
	if dropsPrivileges(c) {
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

// remove deletes an isolated workspace; a shared one stays.
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
