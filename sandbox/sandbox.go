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
	"net"
	"os"
	"path/filepath"
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
	// StateDir holds the workspaces: StateDir/workspaces/<profile> for the
	// shared ones, StateDir/workspaces/isolated/* while isolated ones
	// live. Empty means $XDG_STATE_HOME/switchboard, else
	// ~/.local/state/switchboard.
	StateDir string
	// Bwrap is the bubblewrap executable. Empty means "bwrap", looked up
	// on Switchboard's own PATH at every probe, so that installing it
	// later is noticed at the next attempt.
	Bwrap string
	// Credential, if set, runs the sandboxed servers as this user rather
	// than Switchboard's own (a daemon running as root that wants them to
	// run as nobody). Bubblewrap then needs unprivileged user namespaces,
	// workspaces are created owned by that user, and StateDir and every
	// mount's host path must be reachable by it.
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

	resolvOnce sync.Once // the resolv.conf of sandboxes with network
	resolvPath string
	resolvErr  error
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
