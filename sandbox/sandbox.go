// Package sandbox runs stdio MCP servers in bubblewrap (bwrap) sandboxes:
// it turns a server's sandbox config into a [Profile] (profile.go), finds
// out whether bubblewrap works on this machine (probe.go), keeps the
// servers' writable workspaces (workspace.go), builds the bwrap command
// line (argv.go), applies memory, process and CPU limits (limits.go), and
// follows one sandboxed process from its setup to its cleanup (launch.go).
//
// It spawns nothing itself: the caller (upstream's process.go) starts the
// command a [Launch] describes, in its own process group with its own
// pipes, and tells the Launch what happened. That keeps one spawn path for
// sandboxed and unsandboxed servers, so that the process group, the stderr
// ring, reconnects, health probes and shutdown work the same inside.
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Runtime sandboxes servers on this machine. One Runtime serves every
// session of a process; its zero value is ready to use, and [System] is
// the one used when nothing else is configured. It is safe for concurrent
// use. Its fields must not change once it is in use.
type Runtime struct {
	// StateDir holds the workspaces (see workspace.go):
	// StateDir/workspaces/servers/<name> for each server's own,
	// StateDir/workspaces/<profile> for the shared ones,
	// StateDir/workspaces/isolated/* while isolated ones live. Empty
	// means $XDG_STATE_HOME/switchboard, else ~/.local/state/switchboard.
	StateDir string
	// Bwrap is the bubblewrap executable. Empty means "bwrap", looked up
	// on Switchboard's own PATH at every probe, so that installing it
	// later is noticed at the next attempt.
	Bwrap string
	// Credential, if set, runs the sandboxed servers as this user rather
	// than Switchboard's own; workspaces are created owned by it. It must
	// not be uid 0.
	//
	// A Switchboard running as root never runs a server as root: with
	// Credential unset it uses the user DefaultUser if that exists, else
	// nobody (65534). As root, bubblewrap builds the sandbox with host
	// privileges and no user namespace, so every mount's host path is
	// reachable, and the server is run as that user with no capabilities
	// (see argv.go). Not as root, a Credential other than Switchboard's own
	// user runs bubblewrap itself as that user (it then needs unprivileged
	// user namespaces, and StateDir and every mount's host path must be
	// reachable by it).
	Credential *syscall.Credential
	// Cgroup is a cgroup v2 directory, delegated to this process, in
	// which each sandboxed server gets a cgroup of its own for its memory
	// and process limits. Empty means: detect one (see limits.go); "none"
	// means never use cgroups, only rlimits.
	Cgroup string
	// Slirp4netns is the slirp4netns executable that gives a sandbox with
	// network on its user-mode network (network.go). Empty means
	// "slirp4netns", looked up on PATH at every launch.
	Slirp4netns string
	// Resolver resolves the host names of network allowlists when a
	// sandbox is created. Nil means net.DefaultResolver.
	Resolver *net.Resolver

	probeMu sync.Mutex                  // serialises trials
	probe   atomic.Pointer[probeResult] // the last outcome; nil before the first

	cgOnce sync.Once
	cgDir  string // "" when no usable cgroup was found

	sweepOnce sync.Once // removal of isolated workspaces left by a crash

	userOnce sync.Once
	userCred *syscall.Credential // who servers run as; nil: Switchboard's own user
	userName string              // how the view names it
	userErr  error

	asUser bool // tests only: see dropsPrivileges

	resolvOnce sync.Once // the resolv.conf of sandboxes with network
	resolvPath string
	resolvErr  error
}

// DefaultUser is the user a Switchboard running as root runs sandboxed
// servers as when Runtime.Credential is unset. `switchboard serve`
// creates it as a system user when it is missing (see LookupUser).
const DefaultUser = "switchboard-sandbox"

// nobodyID is the uid and gid of nobody, the last resort of a root
// Switchboard on a machine without DefaultUser.
const nobodyID = 65534

// user returns the credential sandboxed servers run as (nil: Switchboard's
// own, which is not root) and how to name it.
func (rt *Runtime) user() (*syscall.Credential, string, error) {
	rt.userOnce.Do(func() {
		rt.userCred, rt.userName, rt.userErr = resolveUser(rt.Credential, os.Geteuid(), user.Lookup)
	})
	return rt.userCred, rt.userName, rt.userErr
}

// User returns the user sandboxed servers run as, or nil when that is
// Switchboard's own (which is then not root).
func (rt *Runtime) User() (*syscall.Credential, error) {
	c, _, err := rt.user()
	return c, err
}

// resolveUser picks who sandboxed servers run as: the configured
// credential, else Switchboard's own user, except that root is never
// used: a root Switchboard falls back to DefaultUser, then to nobody.
func resolveUser(c *syscall.Credential, euid int, lookup func(string) (*user.User, error)) (*syscall.Credential, string, error) {
	name := func(uid uint32) string {
		if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
			return fmt.Sprintf("uid %d (%s)", uid, u.Username)
		}
		return fmt.Sprintf("uid %d", uid)
	}
	switch {
	case c != nil && c.Uid == 0:
		return nil, "", errors.New("the sandbox user is root (uid 0): a sandboxed server never runs as root; give an unprivileged user")
	case c != nil:
		return c, name(c.Uid), nil
	case euid != 0:
		return nil, name(uint32(euid)) + ", Switchboard's own", nil
	}
	if u, err := lookup(DefaultUser); err == nil {
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, name(uint32(uid)), nil
		}
	}
	return &syscall.Credential{Uid: nobodyID, Gid: nobodyID}, name(nobodyID), nil
}

// dropsPrivileges reports whether a launch runs bubblewrap as root and
// the server as cred: Switchboard is root and cred is another user. Then
// bubblewrap makes no user namespace (a namespace that root creates maps
// its uid 0 to the host's, and /proc/sys and other files are checked by
// uid, not capability), and setpriv, inside the sandbox, drops to cred.
//
// A test sets asUser to build the sandbox as cred in a user namespace
// even as root, as a Switchboard running as cred would: the user
// namespace path is the one every ordinary user's serve takes.
func (rt *Runtime) dropsPrivileges(cred *syscall.Credential) bool {
	return cred != nil && os.Geteuid() == 0 && !rt.asUser
}

// System is the Runtime of sessions that configure none.
var System = &Runtime{}

// stateDir returns the directory that holds the workspaces.
func (rt *Runtime) stateDir() (string, error) {
	if rt.StateDir != "" {
		return rt.StateDir, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "switchboard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "switchboard"), nil
}

// probeTTL is how long a successful probe is trusted. A failed one is not
// cached: the session that met it retries slowly anyway, and the next
// attempt should see a bubblewrap installed in between.
const probeTTL = 10 * time.Minute

// LookupUser returns the credential of the user named by spec, a name or
// UID[:GID] (the gid defaults to the user's group, else to the uid). With
// create set, a missing user of that name is created as a system user
// with no home and no login shell (useradd --system), as a package's
// post-install script would.
func LookupUser(spec string, create bool) (*syscall.Credential, error) {
	if id, gid, ok := strings.Cut(spec, ":"); ok || isNumber(spec) {
		uid, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q: want a user name or UID[:GID]", spec)
		}
		g := uid
		if ok {
			if g, err = strconv.ParseUint(gid, 10, 32); err != nil {
				return nil, fmt.Errorf("%q: want a user name or UID[:GID]", spec)
			}
		} else if u, err := user.LookupId(id); err == nil {
			if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
				g = n
			}
		}
		return checkUser(&syscall.Credential{Uid: uint32(uid), Gid: uint32(g)})
	}
	u, err := user.Lookup(spec)
	if err != nil && create {
		out, cerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
			"--comment", "Switchboard's sandboxed MCP servers", spec).CombinedOutput()
		if cerr != nil {
			return nil, fmt.Errorf("there is no user %s and useradd could not create it (%v: %s): create it, or name another with --sandbox-user",
				spec, cerr, strings.TrimSpace(string(out)))
		}
		u, err = user.Lookup(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("no user %s: %w", spec, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return checkUser(&syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
}

func checkUser(c *syscall.Credential) (*syscall.Credential, error) {
	if c.Uid == 0 || c.Gid == 0 {
		return nil, errors.New("root (uid or gid 0) cannot be the sandbox user: a sandboxed server never runs as root")
	}
	return c, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
