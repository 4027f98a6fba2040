package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// This file enforces a profile's limits on one sandbox.
//
// Where this process has a delegated cgroup v2 directory, each sandbox
// gets a cgroup of its own with memory.max and pids.max: the kernel counts
// the whole tree, and an OOM kill is recorded in memory.events. Elsewhere
// (cgroup v1, as on many CI machines, or no delegation) memory is an
// rlimit: RLIMIT_DATA, not RLIMIT_AS, because Node.js and other JIT
// runtimes reserve far more address space than they use and abort at
// start under an RLIMIT_AS of a gigabyte; RLIMIT_DATA counts only private
// writable mappings (Linux 4.7 and later). Processes cannot be limited
// without a cgroup: RLIMIT_NPROC counts every process of the user (and
// root is exempt), so it would limit the wrong thing. CPU time is always
// RLIMIT_CPU, per process: SIGXCPU at the limit (which a Go program
// ignores), SIGKILL cpuKillGrace seconds of CPU later.
//
// The rlimits are set on the sandbox's init with prlimit(2) while bwrap
// waits on its block fd, before the server is executed, so that the
// server and everything it starts inherit them; Switchboard's own limits
// are never touched. prlimit(2) on another user's process needs
// CAP_SYS_RESOURCE, which a container's root often lacks: a sandbox that
// runs as another user (Runtime.Credential) without it lowers its own
// limits instead, with the shell's ulimit before it executes the server.

// Values of sb.SandboxInfo.Limits.
const (
	LimitsCgroup = "cgroup"
	LimitsRlimit = "rlimit"
	LimitsNone   = "none"
)

// cpuKillGrace is how long a process that got SIGXCPU may go on before
// the hard limit kills it.
const cpuKillGrace = 2

// limits is how one launch enforces its profile's limits.
type limits struct {
	mode        string // LimitsCgroup, LimitsRlimit or LimitsNone
	cgroup      string // the launch's own cgroup, when mode is LimitsCgroup
	memoryBytes int64  // 0: none
	cpuSeconds  int64  // 0: none
	inside      bool   // the rlimits are set by the sandbox itself (wrapper)
	unenforced  []string
}

// limitsFor prepares the limits of a launch of p: its cgroup, if this
// process has one to give.
func (rt *Runtime) limitsFor(p Profile) limits {
	l := limits{memoryBytes: p.MemoryMB << 20, cpuSeconds: p.CPUSeconds}
	if c, _, _ := rt.user(); c != nil && int(c.Uid) != os.Getuid() && !hasCapability(capSysResource) {
		l.inside = true
	}
	if parent := rt.cgroupParent(); parent != "" && (p.MemoryMB > 0 || p.Pids > 0) {
		if dir, err := newCgroup(parent, l.memoryBytes, p.Pids); err == nil {
			l.mode, l.cgroup = LimitsCgroup, dir
			return l
		}
		// A cgroup that cannot be made now is no reason to run without
		// limits: fall back to the rlimits.
	}
	switch {
	case p.MemoryMB > 0 || p.CPUSeconds > 0:
		l.mode = LimitsRlimit
	default:
		l.mode = LimitsNone
	}
	l.unenforced = unenforcedBy(l.mode, p)
	return l
}

// unenforcedBy lists what of p's limits the mode does not bound (the
// values of sb.SandboxInfo.Unenforced): without a cgroup, the number of
// processes ("pids"), and of the memory limit, shared memory
// ("shared_memory": MAP_SHARED mappings and memfd_create files, which
// RLIMIT_DATA does not count) and the sum over the sandbox's processes
// ("memory_total": RLIMIT_DATA bounds each process on its own).
func unenforcedBy(mode string, p Profile) []string {
	if mode == LimitsCgroup {
		return nil
	}
	var u []string
	if p.MemoryMB > 0 {
		u = append(u, "memory_total", "shared_memory")
	}
	if p.Pids > 0 {
		u = append(u, "pids")
	}
	return u
}

// wrapper returns what runs before the server in the sandbox: a shell
// that lowers its own rlimits and executes the server, when they cannot
// be set from outside; else nothing.
func (l *limits) wrapper() []string {
	if !l.inside {
		return nil
	}
	var script []string
	if l.mode == LimitsRlimit && l.memoryBytes > 0 {
		script = append(script, fmt.Sprintf("ulimit -d %d", l.memoryBytes>>10)) // in KiB, soft and hard
	}
	if l.cpuSeconds > 0 {
		// The soft limit first: a hard limit below the soft one is refused.
		script = append(script, fmt.Sprintf("ulimit -S -t %d && ulimit -H -t %d", l.cpuSeconds, l.cpuSeconds+cpuKillGrace))
	}
	if len(script) == 0 {
		return nil
	}
	// The server's command line follows as "$@": nothing of it is parsed
	// by the shell.
	return []string{"/bin/sh", "-c", strings.Join(script, " && ") + ` && exec "$@"`, "sh"}
}

// apply puts the sandbox whose init is pid under the limits.
func (l *limits) apply(pid int) error {
	if l.mode == LimitsCgroup {
		if err := os.WriteFile(filepath.Join(l.cgroup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("moving the sandbox into its cgroup %s: %w", l.cgroup, err)
		}
	}
	if l.inside {
		return nil
	}
	if l.mode == LimitsRlimit && l.memoryBytes > 0 {
		if err := prlimit(pid, syscall.RLIMIT_DATA, uint64(l.memoryBytes), uint64(l.memoryBytes)); err != nil {
			return fmt.Errorf("setting RLIMIT_DATA of the sandbox: %w", err)
		}
	}
	if l.cpuSeconds > 0 {
		if err := prlimit(pid, syscall.RLIMIT_CPU, uint64(l.cpuSeconds), uint64(l.cpuSeconds+cpuKillGrace)); err != nil {
			return fmt.Errorf("setting RLIMIT_CPU of the sandbox: %w", err)
		}
	}
	return nil
}

// oomKills returns how many processes of the sandbox the kernel killed
// at its cgroup's memory limit; -1 if there is no cgroup to tell.
func (l *limits) oomKills() int {
	if l.mode != LimitsCgroup {
		return -1
	}
	f, err := os.Open(filepath.Join(l.cgroup, "memory.events"))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// cpuUsed returns the CPU time the sandbox's cgroup counted; -1 if there
// is no cgroup to tell.
func (l *limits) cpuUsed() time.Duration {
	if l.mode != LimitsCgroup {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(l.cgroup, "cpu.stat"))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			us, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond
		}
	}
	return -1
}

// capSysResource is CAP_SYS_RESOURCE, which prlimit(2) needs for another
// user's process.
const capSysResource = 24

// hasCapability reports whether this process has capability c in effect.
func hasCapability(c uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<c) != 0
		}
	}
	return false
}

// remove deletes the launch's cgroup, once it is empty: the kernel
// empties it a moment after the last process died.
func (l *limits) remove() {
	if l.cgroup == "" {
		return
	}
	for range 50 {
		if err := syscall.Rmdir(l.cgroup); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func prlimit(pid, resource int, cur, max uint64) error {
	lim := [2]uint64{cur, max}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(resource),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// cgroupParent returns the cgroup v2 directory in which sandboxes get
// their cgroups, or "" if there is none.
func (rt *Runtime) cgroupParent() string {
	rt.cgOnce.Do(func() {
		switch rt.Cgroup {
		case "none":
		case "":
			self, _ := os.ReadFile("/proc/self/cgroup")
			rt.cgDir = detectCgroup("/sys/fs/cgroup", self, isCgroup2)
		default:
			if usableCgroup(rt.Cgroup) {
				rt.cgDir = rt.Cgroup
			}
		}
	})
	return rt.cgDir
}

// cgroup2Magic is the f_type of a cgroup v2 file system (statfs(2)).
const cgroup2Magic = 0x63677270

func isCgroup2(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == cgroup2Magic
}

// detectCgroup finds the cgroup this process may create children in:
// its own (from /proc/self/cgroup, the "0::" line of cgroup v2), if the
// unified hierarchy is mounted at mount and the cgroup is delegated to
// it. Nothing is changed to make one usable: moving the daemon into a
// leaf or enabling controllers is the service manager's business
// (systemd's Delegate=yes), not a library's.
func detectCgroup(mount string, self []byte, isV2 func(string) bool) string {
	if !isV2(mount) {
		return ""
	}
	for line := range bytes.Lines(self) {
		if rel, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("0::")); ok {
			if dir := filepath.Join(mount, string(rel)); usableCgroup(dir) {
				return dir
			}
		}
	}
	return ""
}

// usableCgroup reports whether children of dir get the memory and pids
// controllers and this process may create them. A cgroup whose
// subtree_control has controllers holds no process of its own (the
// kernel's no-internal-process rule), which is what delegation to a
// manager of children looks like.
func usableCgroup(dir string) bool {
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(ctl))
	has := func(c string) bool {
		for _, f := range fields {
			if f == c {
				return true
			}
		}
		return false
	}
	return has("memory") && has("pids") && syscall.Access(dir, 2 /* W_OK */) == nil
}

// newCgroup creates a cgroup for one sandbox under parent, with the
// limits set; 0 means none.
func newCgroup(parent string, memoryBytes, pids int64) (string, error) {
	b := make([]byte, 6)
	rand.Read(b)
	dir := filepath.Join(parent, "switchboard-"+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	write := func(file, value string) error {
		return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
	}
	value := func(v int64) string {
		if v <= 0 {
			return "max"
		}
		return strconv.FormatInt(v, 10)
	}
	err := write("memory.max", value(memoryBytes))
	if err == nil && memoryBytes > 0 {
		// Without this the limit would only push the server into swap.
		// A kernel without swap accounting has no such file: no swap to
		// push into either.
		if werr := write("memory.swap.max", "0"); werr != nil && !os.IsNotExist(werr) {
			err = werr
		}
	}
	if err == nil {
		err = write("pids.max", value(pids))
	}
	if err != nil {
		syscall.Rmdir(dir)
		return "", err
	}
	return dir, nil
}
