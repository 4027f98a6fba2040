package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file turns a profile and a command into bwrap's command line. A
// sandbox starts empty: only what is bound is visible. The system
// directories are bound read-only at their own paths, so that a command
// resolved on the host (/usr/bin/npx) is found at the same path inside;
// the user's home and everything else of the host are simply not there.

// Command is what runs in a sandbox.
type Command struct {
	// Path is the executable, resolved on the host. One outside the
	// system directories and the mounts is bound read-only at its own
	// path, so that a server installed anywhere can run without exposing
	// its directory.
	Path string
	// Args are the arguments after the executable.
	Args []string
	// Dir is the working directory; empty means the workspace. One that
	// no mount covers is bound read-only.
	Dir string
}

// systemDirs are bound read-only (or, where they are symlinks, as in a
// merged-/usr system, recreated as the same symlinks).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcPaths are the parts of /etc that programs need to run (the dynamic
// linker's cache, users and groups, time zone, Debian's alternatives) and
// to reach the network (name resolution, CA certificates). The rest of
// /etc stays hidden: it holds secrets (shadow, SSH host keys, package
// manager credentials in npmrc or pip.conf).
var etcPaths = []string{
	"/etc/alternatives", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/crypto-policies",
	"/etc/gai.conf", "/etc/group", "/etc/host.conf", "/etc/hosts", "/etc/ld.so.cache", "/etc/ld.so.conf",
	"/etc/ld.so.conf.d", "/etc/localtime", "/etc/mime.types", "/etc/nsswitch.conf", "/etc/os-release",
	"/etc/passwd", "/etc/pki", "/etc/protocols", "/etc/resolv.conf", "/etc/services", "/etc/ssl", "/etc/timezone",
}

// defaultPath is the PATH of a sandboxed server whose config sets none;
// Switchboard's own PATH names directories the sandbox does not have.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env returns the environment of a sandboxed server: PATH, HOME (the
// workspace), LANG and TMPDIR, with the config's env over them. Nothing
// else of Switchboard's own environment passes: what a server needs from
// it (a proxy, NODE_EXTRA_CA_CERTS) its config names.
func Env(getenv func(string) string, config map[string]string) []string {
	m := map[string]string{
		"PATH":   defaultPath,
		"HOME":   sb.SandboxWorkspacePath,
		"TMPDIR": "/tmp",
		"LANG":   "C.UTF-8",
	}
	if v := getenv("LANG"); v != "" {
		m["LANG"] = v
	}
	for k, v := range config {
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// Inherited fds of bwrap (exec.Cmd.ExtraFiles start at 3).
const (
	infoFD    = 3 // bwrap writes the sandbox's pid and namespaces here
	blockFD   = 4 // bwrap waits to read a byte here before it runs the command
	seccompFD = 5 // bwrap reads the seccomp filter here (dropsPrivileges only)
)

// setpriv drops a root-built sandbox's process to the sandbox user
// (util-linux, in /usr/bin on every distribution that has bubblewrap).
const setpriv = "/usr/bin/setpriv"

// argv returns bwrap's arguments for running c with profile p in the
// workspace ws (a host directory). tmpfsBytes, if positive, caps each of
// the sandbox's memory file systems, /tmp and /dev/shm. netArgs are the
// network's (see network.args). prefix, if set, runs before the command
// (see limits.wrapper). drop, if set, is the user a root bwrap runs the
// command as (see dropsPrivileges).
func argv(p Profile, c Command, ws string, tmpfsBytes int64, netArgs, prefix []string, drop *syscall.Credential) []string {
	// Every namespace, the network one included: with network on,
	// user-mode networking is attached to it from outside (network.go). A
	// PID namespace makes the sandbox's first process its init: when it
	// dies the kernel kills everything left inside, so no grandchild
	// outlives the server, even one that left the process group.
	a := []string{"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net"}
	if drop == nil {
		// Not root: bwrap needs a user namespace to build the sandbox, and
		// in it the server can be kept from making more of them.
		a = append(a, "--unshare-user", "--disable-userns")
	}
	a = append(a,
		// The sandbox's init dies with the bwrap that Switchboard started,
		// so a kill -9 of that one process takes the whole tree.
		"--die-with-parent",
		// As root, bwrap keeps every capability inside unless told not to.
		"--cap-drop", "ALL")
	if drop != nil {
		// What setpriv needs to become the sandbox user; it drops them,
		// and bwrap's no_new_privs keeps a setuid program from regaining
		// any. The seccomp filter stands in for --disable-userns.
		a = append(a, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
			"--seccomp", strconv.Itoa(seccompFD))
	}
	// A root bwrap makes the missing parents of a mount point with modes
	// of its own choosing (0700, seen on bwrap 0.8), which the sandbox
	// user could not enter. They are empty directories of the sandbox's:
	// open them.
	made := map[string]bool{"/tmp": true} // a tmpfs of its own, below
	openParents := func(dest string, mounts []sb.Mount) {
		if drop == nil {
			return
		}
		for _, dir := range parents(dest) {
			if !made[dir] && !Provides(dir) && !withinAny(dir, mounts) {
				made[dir] = true
				a = append(a, "--perms", "0755", "--dir", dir)
			}
		}
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, e := range etcPaths {
		openParents(e, nil)
		a = append(a, "--ro-bind-try", e, e)
	}
	a = append(a, netArgs...)
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	// /tmp and /dev/shm are memory: without a cgroup nothing else would
	// count them. World-writable and sticky, as on the host: a root bwrap
	// makes them root's, and the server is not root.
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		if tmpfsBytes > 0 {
			a = append(a, "--size", strconv.FormatInt(tmpfsBytes, 10))
		}
		a = append(a, "--perms", "1777", "--tmpfs", dir)
	}
	a = append(a, "--bind", ws, sb.SandboxWorkspacePath)

	mounts := slices.Clone(p.Mounts)
	// The command and the working directory are the config's own: they
	// must be there, read-only, if nothing else provides them.
	for _, extra := range []string{c.Dir, c.Path} {
		if extra != "" && !visible(extra, mounts) {
			mounts = append(mounts, sb.Mount{Host: extra, Path: extra, Mode: sb.MountReadOnly})
		}
	}
	slices.SortStableFunc(mounts, func(x, y sb.Mount) int { return strings.Compare(x.Path, y.Path) })
	for i, m := range mounts {
		openParents(m.Path, mounts[:i])
		flag := "--ro-bind"
		if m.Mode == sb.MountReadWrite {
			flag = "--bind"
		}
		a = append(a, flag, m.Host, m.Path)
	}

	dir := c.Dir
	if dir == "" {
		dir = sb.SandboxWorkspacePath
	}
	// The sandbox's root is a tmpfs of bwrap's, where the mount points
	// were made; writable, it would let a server write /etc/x or /x, into
	// nothing that lasts, but where a person would not expect it.
	a = append(a, "--remount-ro", "/", "--chdir", dir,
		"--info-fd", strconv.Itoa(infoFD), "--block-fd", strconv.Itoa(blockFD), "--")
	if drop != nil {
		a = append(a, setpriv, "--reuid="+strconv.FormatUint(uint64(drop.Uid), 10),
			"--regid="+strconv.FormatUint(uint64(drop.Gid), 10), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--")
	}
	a = append(a, prefix...)
	a = append(a, c.Path)
	return append(a, c.Args...)
}

// parents returns the directories above the absolute path p, outermost
// first, without /.
func parents(p string) []string {
	var dirs []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	slices.Reverse(dirs)
	return dirs
}

// withinAny reports whether the sandbox path p is one of the mounts' or
// below one.
func withinAny(p string, mounts []sb.Mount) bool {
	for _, m := range mounts {
		if within(p, m.Path) {
			return true
		}
	}
	return false
}

// Provides reports whether every sandbox shows the host path p without a
// mount (it is in a system directory, read-only) or makes p itself (/,
// /proc, /dev, the workspace), so that a mount there would add nothing or
// be refused.
func Provides(p string) bool {
	if p == "/" || within(p, "/proc") || within(p, "/dev") || within(p, sb.SandboxWorkspacePath) {
		return true
	}
	return visible(p, nil)
}

// visible reports whether the host path p is at the same path in a
// sandbox with these mounts: in a system directory, or in a mount bound
// at its own path.
func visible(p string, mounts []sb.Mount) bool {
	for _, d := range systemDirs {
		if within(p, d) {
			return true
		}
	}
	for _, m := range mounts {
		if m.Host == m.Path && within(p, m.Host) {
			return true
		}
	}
	return false
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}
