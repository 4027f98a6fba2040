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
	// Mounts have Path and Mode filled in and are sorted by Path, so that
	// a mount inside another comes after it.
	Mounts     []sb.Mount
	MemoryMB   int64 // 0: no limit
	Pids       int64 // 0: no limit
	CPUSeconds int64 // 0: no limit
	Isolated   bool
}

// Resolve returns the profile of a server whose config has the sandbox
// config c, and false if the server runs unsandboxed: c turns the sandbox
// off, or c is nil and applyDefault is false (the embedder has not asked
// for the default profile: see upstream.Options.SandboxDefault).
func Resolve(c *sb.SandboxConfig, applyDefault bool) (Profile, bool) {
	if c == nil {
		if !applyDefault {
			return Profile{}, false
		}
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
		Isolated:   c.Workspace == sb.WorkspaceIsolated,
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
	slices.SortFunc(p.Mounts, func(a, b sb.Mount) int { return strings.Compare(a.Path, b.Path) })
	return p, true
}

// ForTest returns the sandbox config of a test session of a server whose
// config has the sandbox config c: the same profile in a fresh isolated
// workspace, so that a test never touches, and never leaves anything in,
// the workspace the live server shares. It is nil when the server runs
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

// key names the shared workspace of the profile: servers whose sandboxes
// look the same share one, as LangBot's Box shares a container per
// resource profile. Required and Isolated do not change what the sandbox
// looks like and are left out.
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
