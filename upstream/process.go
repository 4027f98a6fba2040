package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/sandbox"
)

// baseEnv is what a stdio server inherits from Switchboard's own
// environment; the config's env is merged over it. Passing the whole
// environment would hand every server Switchboard's own secrets
// (SWITCHBOARD_TOKEN, database passwords); passing nothing breaks npx and uvx,
// which need HOME and PATH.
var baseEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// Stopping a process: close its stdin (the spec's polite request), then
// SIGTERM the whole process group, then SIGKILL it. The sum stays under the
// 5 s a Shutdown may take.
const (
	stdinCloseGrace = 1500 * time.Millisecond
	sigtermGrace    = 1500 * time.Millisecond
	sigkillWait     = time.Second
)

// poller waits for the exits of every stdio server and reads their stderr.
var poller proc.Poller

// stderrPipe returns a pipe for a server's stderr: the read end a
// non-blocking descriptor for the poller, the write end for the child.
func stderrPipe() (r int, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, err
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, nil, err
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "|1"), nil
}

// process is a running stdio server: the child in its own process group,
// with pipes Switchboard owns.
//
// The go-sdk's CommandTransport signals only the direct child, so `npx` →
// `node` chains leave grandchildren behind; and exec.Cmd's own stderr
// copying makes Wait block while any grandchild holds the pipe. process
// avoids both: the child leads a new process group that is killed as a
// whole, and the pipes are its own: stdout is read by the go-sdk, stderr
// and the exit by the package's poller.
//
// A sandboxed server is the same process with bwrap in front (box): the
// child is bwrap, which leads the group, the server runs inside it, and
// killing the group, or bwrap alone, ends the whole sandbox.
type process struct {
	child  *os.Process // not the exec.Cmd: its command line is no use once started
	pid    int
	stdout *os.File // read end
	stdin  *os.File // write end

	box        *sandbox.Launch // nil unless sandboxed
	unboxedWhy string          // why a server the default profile would sandbox runs unsandboxed

	exited   chan struct{} // closed once the child is reaped
	exitErr  error         // valid after exited is closed
	exitOnce sync.Once     // of exitedNow: the poller's, or reapIfExited's

	hookMu   sync.Mutex
	exitHook func() // run once the child is reaped (whenExited)

	stderrDone chan struct{} // closed once stderr reached EOF
}

// spawn starts the session's server: in a sandbox if its config asks for
// one (or has none and SandboxDefault is set), else as before.
func (s *Session) spawn(ctx context.Context) (*process, *failure) {
	profile, ok := s.sandboxProfile()
	if !ok {
		return startProcess(s.cfg, s.logs)
	}
	rt := s.sandboxRuntime()
	if !profile.Required {
		// The default ("enabled" unset) sandboxes where bubblewrap works.
		// A server that asked for the sandbox ("enabled": true) is never
		// run without one: its Prepare fails sandbox_unavailable below.
		if _, err := rt.Probe(ctx); err != nil {
			s.log.Warn("bubblewrap does not work here; running the server unsandboxed", "reason", err.Error())
			p, f := startProcess(s.cfg, s.logs)
			if p != nil {
				p.unboxedWhy = "bubblewrap does not work here, so the default profile runs the server unsandboxed: " + err.Error()
			}
			return p, f
		}
	}
	p, f := startSandboxed(ctx, s.cfg, s.logs, rt, profile)
	if p != nil && p.box != nil {
		if old := p.box.Legacy(); old != "" {
			// Before, a server's files were in its profile's workspace;
			// they are not copied, since every server of the profile
			// could write there and no one knows whose they are.
			s.log.Warn("the server has a sandbox workspace of its own now, which starts empty; "+
				"the workspaces servers shared by profile before are kept: copy what it needs from there",
				"workspace", p.box.Info().Workspace, "shared_workspaces", old)
		}
	}
	return p, f
}

// sandboxProfile resolves the session's sandbox profile (see
// sandbox.Resolve), for this server: a workspace of its own is named after
// it, and every session of the server (its per-client ones too) shares it.
func (s *Session) sandboxProfile() (sandbox.Profile, bool) {
	p, ok := sandbox.Resolve(s.cfg.Sandbox, s.opts.SandboxDefault)
	p.Server = s.cfg.Name
	return p, ok
}

func (s *Session) sandboxRuntime() *sandbox.Runtime {
	if s.opts.Sandbox != nil {
		return s.opts.Sandbox
	}
	return sandbox.System
}

// startProcess starts cfg's command. Its stderr goes into logs.
func startProcess(cfg *sb.ServerConfig, logs io.Writer) (*process, *failure) {
	env := mergeEnv(os.Getenv, cfg.Env)
	path, err := lookPath(cfg.Command, envValue(env, "PATH"), cfg.Cwd)
	if err != nil {
		return nil, classifySpawn(cfg.Command, err)
	}
	if f := checkCwd(cfg.Cwd); f != nil {
		return nil, f
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{cfg.Command}, cfg.Args...),
		Env:  env,
		Dir:  cfg.Cwd,
		// Its own process group, so that the group can be killed whole.
		// Pdeathsig: if this process dies without stopping it (kill -9),
		// the child goes too instead of living on until its stdin closes.
		// The kernel ties it to the thread that started the child, and the
		// Go runtime ends no thread of a goroutine that does not lock one.
		// (A sandboxed server gets the same from bwrap --die-with-parent.)
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	return launch(cmd, cfg.Command, logs, nil)
}

// startSandboxed starts cfg's command in a sandbox with profile p. The
// command is looked up on the sandbox's PATH, which is not Switchboard's,
// in the host's directories of the same names.
func startSandboxed(ctx context.Context, cfg *sb.ServerConfig, logs io.Writer, rt *sandbox.Runtime, p sandbox.Profile) (*process, *failure) {
	env := sandbox.Env(os.Getenv, cfg.Env)
	path, err := lookPath(cfg.Command, envValue(env, "PATH"), cfg.Cwd)
	if err != nil {
		f := classifySpawn(cfg.Command, err)
		switch {
		case f.code != sb.CodeCommandNotFound:
		case strings.Contains(cfg.Command, "/"):
			// A path is not looked up on any PATH: it is missing here.
			f.msg = fmt.Sprintf("%s: no such file on this machine", cfg.Command)
		default:
			f.msg = fmt.Sprintf("%s: command not found on the sandbox's PATH (%s): install it in a system directory, "+
				"give its absolute path, or mount its directory and set PATH in env", cfg.Command, envValue(env, "PATH"))
		}
		return nil, f
	}
	if f := checkCwd(cfg.Cwd); f != nil {
		return nil, f
	}
	// Inside, a path means what it meant here only if it is absolute.
	path, _ = filepath.Abs(path)
	dir := cfg.Cwd
	if dir != "" {
		dir, _ = filepath.Abs(dir)
	}
	box, err := rt.Prepare(ctx, p, sandbox.Command{Path: path, Args: cfg.Args, Dir: dir}, env)
	if err != nil {
		if sandbox.IsUnavailable(err) {
			// Never fast: installing bubblewrap or changing a sysctl takes a person.
			return nil, fail(sb.PhaseSandboxUnavailable, sb.CodeSandboxUnavailable, retrySlow, err, "%v", err)
		}
		return nil, fail(sb.PhaseSandboxCreate, sb.CodeSandboxCreate, retrySlow, err, "setting up the sandbox of %s: %v", cfg.Command, err)
	}
	return launch(box.Cmd(), cfg.Command, logs, box)
}

// hiddenPathHint says, for a sandboxed server that exited with exitErr
// and the stderr lines tail, which host path it most likely failed on
// because the sandbox does not show it, and the flag that shows it; "" if
// nothing says it failed on a path. Inside a sandbox, a bare "No such
// file or directory" (or a shell's exit 127, Node's "Cannot find module")
// reads as if the file were missing on the host, when it is only hidden.
func (s *Session) hiddenPathHint(exitErr error, tail []string) string {
	code := -1
	if ee, ok := errors.AsType[*exec.ExitError](exitErr); ok {
		code = ee.ExitCode()
	}
	if code != 126 && code != 127 && !mentionsMissingPath(tail) {
		return ""
	}
	profile, ok := sandbox.Resolve(s.cfg.Sandbox, s.opts.SandboxDefault)
	if !ok {
		return ""
	}
	// The command and the working directory are shown even when no mount
	// covers them (sandbox.Command).
	for _, shown := range []string{s.cfg.Command, s.cfg.Cwd} {
		if filepath.IsAbs(shown) {
			profile.Mounts = append(profile.Mounts, sb.Mount{Host: shown, Path: shown, Mode: sb.MountReadOnly})
		}
	}
	if hidden := profile.HiddenPath(tail); hidden != "" {
		return fmt.Sprintf("; the sandbox does not show %s, which exists on the host: mount it with --mount %s", hidden, hidden)
	}
	if code == 126 || code == 127 {
		return "; the sandbox shows only the system directories and the server's mounts: " +
			"if it needs another host path, mount it with --mount PATH"
	}
	return ""
}

// mentionsMissingPath reports whether a server's last stderr lines say
// that a file it looked for is not there.
func mentionsMissingPath(tail []string) bool {
	for _, line := range tail {
		l := strings.ToLower(line)
		for _, w := range []string{"no such file or directory", "enoent", "cannot find module", ": not found", "can't open file"} {
			if strings.Contains(l, w) {
				return true
			}
		}
	}
	return false
}

func checkCwd(cwd string) *failure {
	if cwd == "" {
		return nil
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return fail(sb.PhaseSpawn, sb.CodeBadCwd, retrySlow, err, "cwd %s: no such directory", cwd)
	}
	return nil
}

// launch starts cmd (whose Path, Args, Env, Dir and SysProcAttr are set)
// with pipes for its stdio, and, if box is set, lets the sandbox run the
// server once its limits are on. name is the command as configured, for
// messages.
func launch(cmd *exec.Cmd, name string, logs io.Writer, box *sandbox.Launch) (*process, *failure) {
	var err error
	var files []*os.File // every pipe end; the parent's copies of the child's ends are closed after Start
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File) {
		if err == nil {
			r, w, err = os.Pipe()
			files = append(files, r, w)
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := -1, (*os.File)(nil)
	if err == nil {
		errR, errW, err = stderrPipe()
		if err == nil {
			files = append(files, errW)
		}
	}
	if err != nil {
		closeAll()
		if box != nil {
			box.Cleanup()
		}
		return nil, fail(sb.PhaseSpawn, sb.CodePipe, retryFast, err, "creating pipes: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		unix.Close(errR)
		if box != nil {
			box.Cleanup()
			// bwrap itself did not start: it went missing since the probe.
			return nil, fail(sb.PhaseSandboxUnavailable, sb.CodeSandboxUnavailable, retrySlow, err,
				"starting bubblewrap (%s): %v", cmd.Path, err)
		}
		return nil, classifySpawn(name, err)
	}
	// The child has its copies; ours would keep the pipes open after it exits.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		child:      cmd.Process,
		pid:        cmd.Process.Pid,
		stdout:     outR,
		stdin:      inW,
		box:        box,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	if box != nil {
		logs = box.Stderr(logs)
	}
	// One goroutine of the package's poller reads every server's stderr
	// and learns of every exit; an idle server costs no goroutine, and no
	// OS thread blocked in waitid, for either.
	poller.Drain(errR, logs, func() {
		if f, ok := logs.(interface{ Flush() }); ok {
			f.Flush()
		}
		close(p.stderrDone)
	})
	// A goroutine only once the child has exited: reading the sandbox's
	// cgroup takes a while, and a thousand servers stopped together must
	// not wait for each other's.
	poller.OnExit(p.pid, func() { go p.exitedNow() })
	if box != nil {
		if err := box.Started(); err != nil {
			// Nothing of the server ran; bwrap may still wait on its block fd.
			p.signalGroup(syscall.SIGKILL)
			p.stop()
			return nil, fail(sb.PhaseSandboxCreate, sb.CodeSandboxCreate, retrySlow, err,
				"setting up the sandbox of %s: %v", name, err)
		}
	}
	return p, nil
}

// exitedNow records the exit of the child, which has exited, and runs the
// hook of whenExited. Only its first call does anything.
func (p *process) exitedNow() {
	p.exitOnce.Do(func() {
		p.exitErr = p.reap()
		if p.box != nil {
			p.box.Exited()
		}
		p.hookMu.Lock()
		close(p.exited)
		hook := p.exitHook
		p.hookMu.Unlock()
		if hook != nil {
			hook()
		}
	})
}

// reapIfExited records the exit of the child if it has exited, whether or
// not the poller has said so yet, and reports whether it had. The
// poller's word can come late (its goroutine waits for a thread, on a
// loaded machine), and a dead server's closed stdout must still be told
// apart from a live one's by its exit.
func (p *process) reapIfExited() bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	var info unix.Siginfo // zero: waitid leaves it so if the child has not exited
	if err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil ||
		info.Signo != int32(unix.SIGCHLD) {
		return false
	}
	p.exitedNow()
	return true
}

// reap reaps the child, which has exited (so this does not block), and
// returns what exec.Cmd.Wait would: nil, an *exec.ExitError, or why the
// wait failed. The pipes are ours, so Wait would have nothing else to do.
func (p *process) reap() error {
	st, err := p.child.Wait()
	if err != nil {
		return err
	}
	if !st.Success() {
		return &exec.ExitError{ProcessState: st}
	}
	return nil
}

// whenExited runs fn once the child is reaped, on a goroutine of its own
// if it is already. It replaces an earlier fn not yet run: a
// process has one watcher, and a goroutine waiting on exited for each
// idle server is what the poller exists to save.
func (p *process) whenExited(fn func()) {
	p.hookMu.Lock()
	defer p.hookMu.Unlock()
	select {
	case <-p.exited:
		go fn()
	default:
		p.exitHook = fn
	}
}

// exitReapGrace is how long a closed pipe waits for the exit to be reaped,
// so that a failure can name the exit status rather than "connection closed".
const exitReapGrace = 200 * time.Millisecond

// waitExit reports whether the process has exited, waiting at most d for
// the poller to say so, then asking the kernel (reapIfExited): the
// poller's word can come late on a loaded machine.
func (p *process) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
		}
	}
	return p.reapIfExited()
}

// signalGroup sends sig to the child's whole process group.
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !isProcessGone(err) {
		// EPERM cannot happen for our own child; anything else is worth
		// nothing more than trying the leader alone.
		p.child.Signal(sig)
	}
}

// isProcessGone reports whether err says a process no longer exists.
func isProcessGone(err error) bool {
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// stop ends the process and everything in its group (for a sandboxed one,
// everything in its sandbox), politely first, and returns once the child
// is reaped and its stderr is drained. It never takes longer than
// stdinCloseGrace+sigtermGrace+2*sigkillWait.
func (p *process) stop() {
	p.stdin.Close()
	if !p.waitExit(stdinCloseGrace) {
		p.signalGroup(syscall.SIGTERM)
		if !p.waitExit(sigtermGrace) {
			p.signalGroup(syscall.SIGKILL)
			p.waitExit(sigkillWait)
		}
	}
	// The leader is gone (or unkillable); grandchildren may live on in its
	// group. Nothing of this server may outlive it.
	p.signalGroup(syscall.SIGKILL)
	if p.box != nil {
		// Past bwrap, the group is in the sandbox, whose end its init tells
		// at once, where a wait on the group reads all of /proc. Processes
		// that left the group die with the init; the workspace of an
		// isolated sandbox goes once they are gone.
		if !p.box.AwaitGone(sigkillWait) {
			p.awaitGroupGone(sigkillWait) // bwrap never reported the init
		}
		p.box.Cleanup()
	} else {
		p.awaitGroupGone(sigkillWait)
	}
	p.stdout.Close()
	t := time.NewTimer(sigkillWait)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
}

// awaitGroupGone waits, at most d, until no process is left in the group:
// SIGKILL is delivered asynchronously, and a caller that returns before the
// grandchildren are gone would report a clean shutdown too early.
//
// Killed grandchildren are reparented to init and linger as zombies until
// it reaps them; a zombie runs nothing, so only live members count.
// The checks space out (proc.WaitWhile).
func (p *process) awaitGroupGone(d time.Duration) {
	proc.WaitWhile(d, func() bool { return proc.GroupHasLiveMember(p.pid) })
}

// mergeEnv builds a child environment: baseEnv from getenv, with extra over it.
func mergeEnv(getenv func(string) string, extra map[string]string) []string {
	m := make(map[string]string, len(baseEnv)+len(extra))
	for _, k := range baseEnv {
		if v := getenv(k); v != "" {
			m[k] = v
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath resolves command against the child's PATH (which the config may
// set), not Switchboard's own. A command with a slash is taken as a path,
// relative to cwd.
func lookPath(command, path, cwd string) (string, error) {
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		return p, checkExecutable(p)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue // an empty PATH entry means ".", which we do not search
		}
		p := filepath.Join(dir, command)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory: %w", p, os.ErrPermission)
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable: %w", p, os.ErrPermission)
	}
	return nil
}
