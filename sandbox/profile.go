package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
)

// The limits of the default profile (see sb.SandboxConfig). Memory is
// generous because it is enforced, without a cgroup, as RLIMIT_DATA,
// which counts what a JIT runtime maps and does not use; no CPU-time
// limit because a long-lived server accumulates CPU time for as long as
// it runs.
const (
	DefaultMemoryMB = 2048
	DefaultPids     = 512
)

// Profile is a sandbox config with every default applied: what a launch
// sets up.
type Profile struct {
	// Required: the config says "enabled": true, so the server runs
	// sandboxed or not at all. Otherwise it runs sandboxed where
	// bubblewrap works, and unsandboxed (saying so) where it does not.
	Required bool
	Network  bool
	// Allow is the network allowlist as configured; empty: everything.
	Allow []string
	// Mounts are the config's own and its derived ones (read-only at
	// their own paths), with Path and Mode filled in, sorted by Path so
	// that a mount inside another comes after it.
	Mounts     []sb.Mount
	MemoryMB   int64 // 0: no limit
	Pids       int64 // 0: no limit
	CPUSeconds int64 // 0: no limit
	// Workspace is whose the workspace is: sb.WorkspacePerServer (the
	// default), sb.WorkspaceShared or sb.WorkspaceIsolated; never empty.
	Workspace sb.SandboxWorkspace
	// Server is the name of the server (sb.IsName), which names its
	// workspace under sb.WorkspacePerServer. Resolve leaves it empty: the
	// caller, which knows the server, sets it.
	Server string
}

// Resolve returns the profile of a server whose config has the sandbox
// config c, and false if the server runs unsandboxed: c turns the sandbox
// off, or c is nil and applyDefault is false (the embedder has not asked
// for the default profile: see upstream.Options.SandboxDefault).
func Resolve(c *sb.SandboxConfig, applyDefault bool) (Profile, bool) {
	if c.Derived() && !applyDefault {
		// Nothing of the user's own: derived mounts alone do not ask for
		// a sandbox the embedder does not apply by default.
		return Profile{}, false
	}
	if c == nil {
		c = &sb.SandboxConfig{}
	}
	if c.Enabled != nil && !*c.Enabled {
		return Profile{}, false
	}
	limit := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	p := Profile{
		Required:   c.Enabled != nil && *c.Enabled,
		Network:    c.Network == nil || !c.Network.Off,
		MemoryMB:   limit(c.MemoryMB, DefaultMemoryMB),
		Pids:       limit(c.Pids, DefaultPids),
		CPUSeconds: limit(c.CPUSeconds, 0),
		Workspace:  c.Workspace,
	}
	if p.Workspace == "" {
		p.Workspace = sb.WorkspacePerServer
	}
	if c.Network != nil && !c.Network.Off {
		p.Allow = slices.Clone(c.Network.Allow)
	}
	for _, m := range c.Mounts {
		if m.Path == "" {
			m.Path = m.Host
		}
		if m.Mode == "" {
			m.Mode = sb.MountReadOnly
		}
		p.Mounts = append(p.Mounts, m)
	}
	// Derived mounts are read-only at their own path; a mount of the
	// user's at the same path wins (that is how "--mount HOST:rw" widens
	// one).
	for _, d := range c.DerivedMounts {
		if !slices.ContainsFunc(p.Mounts, func(m sb.Mount) bool { return m.Path == d.Host }) {
			p.Mounts = append(p.Mounts, sb.Mount{Host: d.Host, Path: d.Host, Mode: sb.MountReadOnly})
		}
	}
	slices.SortFunc(p.Mounts, func(a, b sb.Mount) int { return strings.Compare(a.Path, b.Path) })
	return p, true
}

// ForTest returns the sandbox config of a test session of a server whose
// config has the sandbox config c: the same profile in a fresh isolated
// workspace, so that a test never touches, and never leaves anything in,
// the workspace of the live server. It is nil when the server runs
// unsandboxed.
func ForTest(c *sb.SandboxConfig, applyDefault bool) *sb.SandboxConfig {
	if _, ok := Resolve(c, applyDefault); !ok {
		return c.Clone()
	}
	t := c.Clone()
	if t == nil {
		t = &sb.SandboxConfig{}
	}
	t.Workspace = sb.WorkspaceIsolated
	return t
}

// key names the shared workspace of the profile (sb.WorkspaceShared):
// servers whose sandboxes look the same share one, as LangBot's Box shares
// a container per resource profile. Required, Workspace and Server do not
// change what the sandbox looks like and are left out, so that the key is
// the one every server's workspace had before each got its own: a config
// that asks for "shared" finds what it left there.
func (p Profile) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "v1 network=%t memory=%d pids=%d cpu=%d\n", p.Network, p.MemoryMB, p.Pids, p.CPUSeconds)
	for _, m := range p.Mounts {
		fmt.Fprintf(h, "mount %q %q %s\n", m.Host, m.Path, m.Mode)
	}
	for _, a := range p.Allow {
		fmt.Fprintf(h, "allow %q\n", a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
