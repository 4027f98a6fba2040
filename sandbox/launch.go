package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"golang.org/x/sys/unix"

	"github.com/switchboard-mcp/switchboard/internal/proc"
)

// This file follows one sandboxed process from setup to cleanup. The
// caller owns the process (it starts and reaps it); a Launch owns what the
// sandbox adds around it: the workspace, the cgroup, the two fds bwrap
// reports on and waits on (until the server runs), and the answer to "why
// did it die?".
//
//	Prepare ─► prepared ─(caller: Cmd().Start)─► started ─Started─► running ─(caller: Wait)─► Exited ─► AwaitGone ─► Cleanup
//	   │ probe, workspace, cgroup fail        │ bwrap died before reporting its init,
//	   ▼                                      │ or the limits could not be applied
//	*UnavailableError / *CreateError          ▼ *CreateError (the caller kills the group and reaps it; then Cleanup)
//
// Between started and running bwrap has built the sandbox and waits on its
// block fd without running the server: that is when the limits are put on
// the sandbox's init, so that the server never runs a moment without them.

// CreateError says that a sandbox could not be set up. Nothing of the
// server ran.
type CreateError struct {
	Reason string
	Err    error
}

func (e *CreateError) Error() string { return e.Reason }
func (e *CreateError) Unwrap() error { return e.Err }

// startTimeout bounds how long Started waits for bwrap to report the
// sandbox's init; building a sandbox takes milliseconds.
const startTimeout = 10 * time.Second

// Launch is one sandboxed process, from its setup to its cleanup. Its
// methods are called in the order of the diagram above, from one
// goroutine at a time, except Info, which may be called at any time.
type Launch struct {
	p     Profile
	bwrap string
	args  []string
	env   []string
	cred  *syscall.Credential // who bwrap runs as; nil: Switchboard's own user
	user  string              // who the server runs as, for the view
	ws    workspace
	lim   limits
	net   *network

	infoR, infoW   *os.File // bwrap writes the sandbox's pid to infoW
	blockR, blockW *os.File // bwrap runs the server once blockW is written
	seccompR       *os.File // bwrap reads the filter here; nil unless dropsPrivileges

	initPID int           // host pid of the sandbox's init, once started
	pidNS   string        // "pid:[N]", the sandbox's PID namespace, once started
	oom     int           // OOM kills recorded at exit; -1 if unknown
	cpu     time.Duration // CPU time of the sandbox recorded at exit; -1 if unknown
	stderr  oomWatch      // what the sandbox's stderr said about memory
}

// Prepare sets up a sandbox for c with profile p and returns it, ready to
// start: it probes bubblewrap, creates the workspace and the cgroup,
// prepares the network (network.go), and builds the bwrap command line. env is the server's environment (see
// Env). The error is an *UnavailableError or a *CreateError.
func (rt *Runtime) Prepare(ctx context.Context, p Profile, c Command, env []string) (*Launch, error) {
	bwrap, err := rt.Probe(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range p.Mounts {
		if _, err := os.Stat(m.Host); err != nil {
			return nil, &CreateError{Err: err, Reason: fmt.Sprintf(
				"the host path %s of the sandbox mount at %s cannot be used: %v", m.Host, m.Path, errors.Unwrap(err))}
		}
	}
	cred, userName, err := rt.user()
	if err != nil {
		return nil, &CreateError{Err: err, Reason: err.Error()}
	}
	ws, err := rt.workspace(p)
	if err != nil {
		return nil, &CreateError{Err: err, Reason: err.Error()}
	}
	l := &Launch{p: p, bwrap: bwrap, env: env, user: userName, ws: ws, lim: rt.limitsFor(p), oom: -1, cpu: -1}
	var drop *syscall.Credential
	if rt.dropsPrivileges(cred) {
		drop = cred
	} else {
		l.cred = cred
	}
	// The network's helpers run as bwrap does, outside the sandbox.
	if l.net, err = rt.networkFor(ctx, p, l.cred); err != nil {
		ws.remove()
		return nil, err
	}
	if l.infoR, l.infoW, err = os.Pipe(); err == nil {
		l.blockR, l.blockW, err = os.Pipe()
	}
	if err == nil && drop != nil {
		l.seccompR, err = filterPipe()
	}
	if err != nil {
		l.Cleanup()
		return nil, &CreateError{Err: err, Reason: "creating the sandbox's pipes: " + err.Error()}
	}
	var tmpfs int64
	if p.MemoryMB > 0 {
		// /tmp and /dev/shm are tmpfs, that is memory: without a cgroup
		// nothing else would count them.
		tmpfs = p.MemoryMB << 20
	}
	l.args = argv(p, c, ws.dir, tmpfs, l.net.args(), l.lim.wrapper(), drop)
	return l, nil
}

// filterPipe returns the read end of a pipe that holds the seccomp filter
// of a root-built sandbox, whole: it is a few hundred bytes, far below a
// pipe's buffer, so the write cannot block.
func filterPipe() (*os.File, error) {
	filter := noUserNSFilter()
	if filter == nil {
		return nil, fmt.Errorf("no seccomp filter for %s: a root Switchboard cannot keep sandboxed servers "+
			"from making user namespaces here", runtime.GOARCH)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(filter)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Cmd returns the unstarted bwrap command. The caller sets its stdio,
// starts it and calls Started; it must not change the rest.
//
// The command leads a new session rather than just a process group: with
// no controlling terminal, the server cannot push input into the
// terminal Switchboard may run in (TIOCSTI), which bwrap's --new-session
// would prevent only by moving the server out of the group Switchboard
// kills. As a session leader it still leads its own process group.
func (l *Launch) Cmd() *exec.Cmd {
	return &exec.Cmd{
		Path:        l.bwrap,
		Args:        append([]string{l.bwrap}, l.args...),
		Env:         l.env,
		ExtraFiles:  l.extraFiles(),
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Credential: l.cred},
	}
}

// extraFiles returns bwrap's inherited fds, from 3 on: infoFD, blockFD
// and, in a root-built sandbox, seccompFD.
func (l *Launch) extraFiles() []*os.File {
	files := []*os.File{l.infoW, l.blockR}
	if l.seccompR != nil {
		files = append(files, l.seccompR)
	}
	return files
}

// Args returns bwrap's arguments, for logs and tests.
func (l *Launch) Args() []string { return l.args }

// sandboxInfo is what bwrap writes to its info fd.
type sandboxInfo struct {
	ChildPID int    `json:"child-pid"`
	PIDNS    uint64 `json:"pid-namespace"`
}

// Started waits until bwrap has created the sandbox, puts the limits on
// it and lets the server run. On an error, the server has not run: the
// caller kills the process group, reaps bwrap and calls Cleanup.
func (l *Launch) Started() error {
	// Our copies of bwrap's ends: with them open, a bwrap that died would
	// never be noticed.
	l.infoW.Close()
	l.blockR.Close()
	l.infoW, l.blockR = nil, nil
	if l.seccompR != nil {
		l.seccompR.Close()
		l.seccompR = nil
	}

	l.infoR.SetReadDeadline(time.Now().Add(startTimeout))
	data, err := io.ReadAll(io.LimitReader(l.infoR, 64<<10))
	// bwrap reports once: a running server need not hold the pipe.
	l.infoR.Close()
	l.infoR = nil
	var info sandboxInfo
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err == nil && info.ChildPID <= 0 {
		err = errors.New("no child-pid")
	}
	if err != nil {
		reason := "bubblewrap exited before creating the sandbox"
		if len(data) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
			reason = "bubblewrap did not report the sandbox: " + err.Error()
		}
		return &CreateError{Err: err, Reason: reason}
	}
	l.initPID = info.ChildPID
	l.pidNS = fmt.Sprintf("pid:[%d]", info.PIDNS)
	if err := l.lim.apply(info.ChildPID); err != nil {
		// bwrap is still waiting: closing the block fd now would let the
		// server run without its limits. The caller kills it first.
		return &CreateError{Err: err, Reason: err.Error()}
	}
	if err := l.net.attach(info.ChildPID); err != nil {
		return &CreateError{Err: err, Reason: err.Error()}
	}
	if _, err := l.blockW.Write([]byte{1}); err != nil {
		return &CreateError{Err: err, Reason: "bubblewrap exited before running the server"}
	}
	l.blockW.Close()
	l.blockW = nil
	return nil
}

// Exited records what the end of the process left behind for Explain; the
// caller calls it once the process is reaped.
func (l *Launch) Exited() {
	l.oom = l.lim.oomKills()
	l.cpu = l.lim.cpuUsed()
}

// AwaitGone waits, at most d, until no process is left in the sandbox,
// and reports whether it could tell: not for a sandbox whose init bwrap
// never reported. The kernel kills them all when the sandbox's init dies,
// but delivers the kills asynchronously, and a process that left the
// process group (a daemonizing grandchild) is not seen by a wait on the
// group.
//
// It watches the init alone: the init of a PID namespace does not become a
// zombie before every other process of the namespace is gone (the kernel
// waits for them in its exit), so a dead init is an empty sandbox. A scan
// of /proc for the namespace's processes would read every process of the
// machine, and a thousand sandboxes stopped together, each scanning, took
// serve 20 s to stop.
func (l *Launch) AwaitGone(d time.Duration) bool {
	if l.pidNS == "" {
		return false
	}
	proc.WaitWhile(d, func() bool { return l.initAlive() })
	return true
}

// initAlive reports whether the sandbox's init is alive (not a zombie).
// Its pid, once reaped, may be another process's: that one is in another
// PID namespace.
func (l *Launch) initAlive() bool {
	pid := strconv.Itoa(l.initPID)
	link, err := os.Readlink("/proc/" + pid + "/ns/pid")
	return err == nil && link == l.pidNS && proc.Alive(l.initPID)
}

// Alive reports whether a process other than a zombie is left in the
// sandbox, by a scan of every process: the tests' check of what AwaitGone
// relies on.
func (l *Launch) Alive() bool { return l.pidNS != "" && inNamespace(l.pidNS) }

// inNamespace reports whether a live process is in the PID namespace ns.
func inNamespace(ns string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "pid")); err == nil && link == ns && proc.Alive(pid) {
			return true
		}
	}
	return false
}

// Cleanup removes what the launch created: an isolated workspace, the
// cgroup, the fds. A server's own workspace stays, for its next process,
// and so does a shared one, for the next server of the profile.
func (l *Launch) Cleanup() {
	for _, f := range []*os.File{l.infoR, l.infoW, l.blockR, l.blockW, l.seccompR} {
		if f != nil {
			f.Close()
		}
	}
	l.infoR, l.infoW, l.blockR, l.blockW, l.seccompR = nil, nil, nil, nil, nil
	l.net.stop()
	l.ws.remove()
	l.lim.remove()
}

// Info describes the sandbox for the runtime view.
func (l *Launch) Info() *sb.SandboxInfo {
	i := info(l.p, l.ws.dir, l.user, l.lim.mode, l.lim.unenforced)
	i.NetworkAllowed = append([]string(nil), l.net.allowed...)
	return i
}

// Legacy returns the directory of the profiles' shared workspaces if this
// launch created the server's own workspace (its first start since
// servers got their own) and shared ones are kept there: what the server
// wrote before (server-memory's file, a cache) is in one of them, named
// by the profile the server had then. It returns "" otherwise.
func (l *Launch) Legacy() string { return l.ws.legacy }

// Plan describes the sandbox a launch of p would get here, without
// creating anything (for the view of a server that is not running): the
// workspace is the directory Prepare would use.
func (rt *Runtime) Plan(p Profile) *sb.SandboxInfo {
	dir, _ := rt.workspaceDir(p) // "" for an isolated one, not made yet
	mode := LimitsNone
	switch {
	case rt.cgroupParent() != "" && (p.MemoryMB > 0 || p.Pids > 0):
		mode = LimitsCgroup
	case p.MemoryMB > 0 || p.CPUSeconds > 0:
		mode = LimitsRlimit
	}
	_, userName, _ := rt.user()
	return info(p, dir, userName, mode, unenforcedBy(mode, p))
}

func info(p Profile, dir, user, mode string, unenforced []string) *sb.SandboxInfo {
	return &sb.SandboxInfo{Enabled: true, User: user, Workspace: dir, WorkspaceMode: p.Workspace, Network: p.Network,
		NetworkAllow: append([]string(nil), p.Allow...), Limits: mode, Unenforced: append([]string(nil), unenforced...)}
}

// Stderr returns w with a watch on what passes: the caller copies the
// sandbox's stderr through it, so that Explain can read a runtime's
// out-of-memory message however long the stack dump that follows it.
func (l *Launch) Stderr(w io.Writer) io.Writer {
	l.stderr.w = w
	return &l.stderr
}

// Explain tells whether the sandboxed process, which ended with exitErr
// (from exec.Cmd.Wait), died of one of its limits. It returns
// sb.CodeMemoryLimit or sb.CodeCPULimit and a sentence that says which
// limit and how to raise it, or "" if no limit explains the end. Call it
// after Exited and once the stderr copy has ended.
func (l *Launch) Explain(exitErr error) (sb.Code, string) {
	return explain(l.p, l.lim.mode, l.oom, l.cpu, exitErr, l.stderr.said.Load())
}

// explain is Explain without the Launch, for tests. oomKills and cpu are
// what the cgroup recorded (-1: no cgroup). The evidence, from the surest:
//   - a cgroup's OOM kill counter (the kernel says so);
//   - SIGXCPU, which only RLIMIT_CPU sends; SIGKILL after the cgroup
//     counted at least the CPU time allowed; without a cgroup, SIGKILL
//     under a CPU limit, which is how RLIMIT_CPU ends a process that
//     ignores SIGXCPU (as Go programs do): the CPU time of the sandbox
//     is lost with its init, which bwrap does not reap;
//   - under RLIMIT_DATA, a runtime's own out-of-memory message (oomSaid):
//     a failed allocation is all the process sees, and each runtime
//     words it.
func explain(p Profile, mode string, oomKills int, cpu time.Duration, exitErr error, oomSaid bool) (sb.Code, string) {
	memory := func(how string) (sb.Code, string) {
		return sb.CodeMemoryLimit, fmt.Sprintf("ran out of memory at its sandbox memory limit of %d MB (%s); raise sandbox.memory_mb if it needs more",
			p.MemoryMB, how)
	}
	if oomKills > 0 {
		return memory("cgroup memory.max")
	}
	sig := exitSignal(exitErr)
	limit := time.Duration(p.CPUSeconds) * time.Second
	if p.CPUSeconds > 0 && (sig == syscall.SIGXCPU || (sig == syscall.SIGKILL && (cpu < 0 || cpu >= limit))) {
		return sb.CodeCPULimit, fmt.Sprintf("was killed at its sandbox CPU-time limit of %d s (RLIMIT_CPU: SIGXCPU, then SIGKILL); "+
			"raise sandbox.cpu_seconds if it needs more", p.CPUSeconds)
	}
	if p.MemoryMB > 0 && mode == LimitsRlimit && exitErr != nil && oomSaid {
		return memory("RLIMIT_DATA")
	}
	return "", ""
}

// oomWords are how runtimes report a failed allocation: Go ("fatal
// error: runtime: out of memory"), Node.js ("JavaScript heap out of
// memory", "Fatal process out of memory"), Python (MemoryError), C++
// (std::bad_alloc), Rust ("memory allocation of N bytes failed"), libc.
var oomWords = []string{"out of memory", "cannot allocate memory", "memoryerror", "bad_alloc", "memory allocation of", "enomem"}

// oomWatch passes a stream to w and notes whether it mentions one of the
// oomWords. A word split between two writes is still seen: the tail of
// each write is kept.
type oomWatch struct {
	w    io.Writer
	said atomic.Bool
	tail []byte // the end of the last write, lower-cased
}

// oomWordMax is the length of the longest of oomWords.
const oomWordMax = 22

func (o *oomWatch) Write(p []byte) (int, error) {
	if !o.said.Load() {
		buf := append(o.tail, bytes.ToLower(p)...)
		for _, w := range oomWords {
			if bytes.Contains(buf, []byte(w)) {
				o.said.Store(true)
				break
			}
		}
		o.tail = append(o.tail[:0], buf[max(len(buf)-oomWordMax, 0):]...)
	}
	return o.w.Write(p)
}

// Flush flushes w, if it buffers.
func (o *oomWatch) Flush() {
	if f, ok := o.w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// exitSignal returns the signal that ended the sandboxed command: bwrap
// reports a command killed by signal N as its own exit status 128+N.
func exitSignal(err error) syscall.Signal {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return 0
	case ws.Signaled():
		return ws.Signal()
	case ws.ExitStatus() > 128 && ws.ExitStatus() < 128+65:
		return syscall.Signal(ws.ExitStatus() - 128)
	}
	return 0
}

// DescribeExit tells how a sandboxed command ended, e.g. "exited with
// status 3" or "was killed by SIGKILL (killed)" (bwrap turns the command's
// death by a signal into its own exit status 128+N).
func DescribeExit(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err == nil {
			return "exited with status 0"
		}
		return "ended: " + err.Error()
	}
	if sig := exitSignal(err); sig != 0 {
		// "was killed by SIGKILL", as an unsandboxed server's exit reads;
		// the signal's description ("killed") alone read "killed by
		// signal killed".
		if name := unix.SignalName(sig); name != "" {
			return fmt.Sprintf("was killed by %s (%s)", name, sig)
		}
		return fmt.Sprintf("was killed by signal %d (%s)", int(sig), sig)
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// SetupFailure returns bubblewrap's own complaint among a sandboxed
// process's last stderr lines ("bwrap: Can't find source path ..."): the
// sandbox could not be built, so the server never ran.
func SetupFailure(tail []string) (string, bool) {
	for i := len(tail) - 1; i >= 0; i-- {
		if strings.HasPrefix(tail[i], "bwrap: ") {
			return tail[i], true
		}
	}
	return "", false
}
