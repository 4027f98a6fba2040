package upstream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
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

// stderrBufferSize is the read buffer of a server's stderr.
const stderrBufferSize = 2048

// process is a running stdio server: the child in its own process group,
// with pipes Switchboard owns.
//
// The go-sdk's CommandTransport signals only the direct child, so `npx` →
// `node` chains leave grandchildren behind; and exec.Cmd's own stderr
// copying makes Wait block while any grandchild holds the pipe. process
// avoids both: the child leads a new process group that is killed as a
// whole, and the pipes are *os.File values read by goroutines it owns.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdout *os.File // read end
	stdin  *os.File // write end

	exited  chan struct{} // closed once the child is reaped
	exitErr error         // valid after exited is closed

	stderrDone chan struct{} // closed once stderr reached EOF
}

// startProcess starts cfg's command. Its stderr goes into logs.
func startProcess(cfg *sb.ServerConfig, logs io.Writer) (*process, *failure) {
	env := mergeEnv(os.Getenv, cfg.Env)
	path, err := lookPath(cfg.Command, envValue(env, "PATH"), cfg.Cwd)
	if err != nil {
		return nil, classifySpawn(cfg.Command, err)
	}
	if cfg.Cwd != "" {
		if st, err := os.Stat(cfg.Cwd); err != nil || !st.IsDir() {
			return nil, fail(sb.PhaseSpawn, sb.CodeBadCwd, retrySlow, err, "cwd %s: no such directory", cfg.Cwd)
		}
	}

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
	errR, errW := pipe()
	if err != nil {
		closeAll()
		return nil, fail(sb.PhaseSpawn, sb.CodePipe, retryFast, err, "creating pipes: %v", err)
	}

	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{cfg.Command}, cfg.Args...),
		Env:    env,
		Dir:    cfg.Cwd,
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
		// Its own process group, so that the group can be killed whole.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, classifySpawn(cfg.Command, err)
	}
	// The child has its copies; ours would keep the pipes open after it exits.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdout:     outR,
		stdin:      inW,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		// A small buffer: an idle server's stderr reader should not hold
		// io.Copy's 32 KiB for the session's whole life.
		io.CopyBuffer(logs, struct{ io.Reader }{errR}, make([]byte, stderrBufferSize))
		if f, ok := logs.(interface{ Flush() }); ok {
			f.Flush()
		}
	}()
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// exitReapGrace is how long a closed pipe waits for the exit to be reaped,
// so that a failure can name the exit status rather than "connection closed".
const exitReapGrace = 200 * time.Millisecond

// waitExit reports whether the process has exited, waiting at most d.
func (p *process) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// signalGroup sends sig to the child's whole process group.
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !isProcessGone(err) {
		// EPERM cannot happen for our own child; anything else is worth
		// nothing more than trying the leader alone.
		p.cmd.Process.Signal(sig)
	}
}

// isProcessGone reports whether err says a process no longer exists.
func isProcessGone(err error) bool {
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// stop ends the process and everything in its group, politely first, and
// returns once the child is reaped and its stderr is drained. It never takes
// longer than stdinCloseGrace+sigtermGrace+2*sigkillWait.
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
	p.awaitGroupGone(sigkillWait)
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
func (p *process) awaitGroupGone(d time.Duration) {
	deadline := time.Now().Add(d)
	for proc.GroupHasLiveMember(p.pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
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
