// Package daemontest runs `switchboard serve` as a real process for tests
// and benchmarks: built once with "go build" ([Build], [Binary]), started on
// a loopback port in its own process group ([StartProcess], [Start]) with a
// config directory of its own, waited for until its API answers, talked to
// with its credential ([Daemon.Client]), and stopped by its pid
// ([Daemon.Stop], [Daemon.Kill]).
//
// The core ([Build], [StartProcess] and the [Daemon] methods) needs no
// testing.TB, so that the benchmark driver (bench/, run by go run) uses the
// same code as the tests; [Binary], [Start] and [Command] wrap it for tests.
package daemontest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-mcp/switchboard/client"
)

// Defaults of [Options] and [Daemon.WaitLog].
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopGrace    = 15 * time.Second // serve itself gives HTTP and the sessions 10 s
	DefaultWaitTimeout  = 30 * time.Second
)

// pipeDrainDelay bounds how long reaping waits for the output pipes to
// close after the process exited (a leaked grandchild could hold them open).
const pipeDrainDelay = 2 * time.Second

// healthPoll is the interval between GET /healthz while the daemon starts.
const healthPoll = 10 * time.Millisecond

// ErrStopTimeout is returned (wrapped) by [Daemon.Stop] when the daemon did
// not exit within its grace after SIGTERM and had to be killed.
var ErrStopTimeout = errors.New("switchboard serve did not exit after SIGTERM")

// Options configure a daemon. Each string field is a flag of serve; the
// zero value of every field is the documented default.
type Options struct {
	// Binary is the switchboard binary. [StartProcess] requires it;
	// [Start] uses [Binary] if empty.
	Binary string
	// DB is the --db DSN (sqlite:PATH or postgres://...). [StartProcess]
	// requires it, so that no test writes serve's default ./switchboard.db;
	// [Start] uses a SQLite file in a temporary directory if empty.
	DB string
	// Token is the --token. If empty, serve generates its credential in
	// ConfigDir, and the harness reads it from there ([Daemon.Token]).
	Token string
	// TokenFile is the --token-file, instead of Token: the harness reads
	// the token from it once serve is up.
	TokenFile string
	// NoAuth passes --insecure-no-auth: the daemon requires no credential.
	// For clients that cannot send a header (the conformance suite's CLI).
	NoAuth bool
	// ConfigDir is serve's $XDG_CONFIG_HOME, where it keeps the credential
	// it generates. If empty, [StartProcess] makes a temporary directory
	// and removes it once the daemon has exited; [Start] uses one in tb's
	// TempDir. Never the user's own: a test must not read or write it.
	ConfigDir string
	// Listen is the --listen address; 127.0.0.1:0 if empty. The harness
	// contacts the daemon on loopback only: an unspecified address
	// (0.0.0.0:0) is reached through 127.0.0.1, and any other
	// non-loopback address is refused once serve logs it.
	Listen string
	// LogLevel is the --log-level; serve's default (info) if empty.
	LogLevel string
	// Args are more arguments of serve, after the ones above (a later flag
	// wins).
	Args []string
	// Env is added to the environment, which is this process's without
	// any SWITCHBOARD_* variable (see [Environ]).
	Env []string
	// Dir is the working directory; this process's if empty ([Start]: a
	// temporary directory).
	Dir string
	// OnLine, if set, is called with every complete line the daemon writes
	// to stdout or stderr, one call at a time, from a goroutine of the
	// harness. It must not block for long, since the daemon's writes wait
	// for it.
	OnLine func(line string)
	// StartTimeout bounds the wait for serve to log its address and for
	// GET /healthz to answer 200; DefaultStartTimeout if zero.
	StartTimeout time.Duration
	// StopGrace bounds the wait for serve to exit after the SIGTERM of
	// [Daemon.Stop]; DefaultStopGrace if zero.
	StopGrace time.Duration
}

// Daemon is a running `switchboard serve` started by [StartProcess] or
// [Start]. Its methods are safe for concurrent use.
type Daemon struct {
	URL       string    // base URL, e.g. "http://127.0.0.1:41234"
	MCPURL    string    // URL + "/mcp", the aggregate MCP endpoint
	Token     string    // what the API and /mcp require: Options.Token or the generated credential; empty with NoAuth
	ConfigDir string    // serve's $XDG_CONFIG_HOME: a CLI given it finds the credential as the daemon's user does
	PID       int       // also its process group id
	Started   time.Time // just before the exec
	Ready     time.Time // when GET /healthz first answered 200

	cmd   *exec.Cmd
	grace time.Duration
	log   *logLines
	done  chan struct{} // closed once the process has been reaped

	stopOnce sync.Once
	stopErr  error
}

// StartProcess starts `switchboard serve` as o says, in its own process
// group, and waits until it logs the address it serves on and GET /healthz
// answers 200 there, for up to o.StartTimeout or until ctx ends. On failure
// the process is killed and the error ends with the last lines of its log.
// The caller must stop the daemon ([Daemon.Stop] or [Daemon.Kill]).
func StartProcess(ctx context.Context, o Options) (*Daemon, error) {
	if o.Binary == "" || o.DB == "" {
		return nil, errors.New("daemontest: Options.Binary and Options.DB are required")
	}
	removeConfig := func() {}
	if o.ConfigDir == "" {
		dir, err := os.MkdirTemp("", "switchboard-config-")
		if err != nil {
			return nil, err
		}
		o.ConfigDir, removeConfig = dir, func() { _ = os.RemoveAll(dir) }
	}
	argv := []string{"serve", "--listen", cmp.Or(o.Listen, "127.0.0.1:0"), "--db", o.DB}
	if o.Token != "" {
		argv = append(argv, "--token", o.Token)
	}
	if o.TokenFile != "" {
		argv = append(argv, "--token-file", o.TokenFile)
	}
	if o.NoAuth {
		argv = append(argv, "--insecure-no-auth")
	}
	if o.LogLevel != "" {
		argv = append(argv, "--log-level", o.LogLevel)
	}
	cmd := exec.Command(o.Binary, append(argv, o.Args...)...)
	env := []string{"XDG_CONFIG_HOME=" + o.ConfigDir}
	if o.ConfigDir != "" {
		// Sandbox workspaces live in $XDG_STATE_HOME: the test's, not the
		// user's ~/.local/state.
		env = append(env, "XDG_STATE_HOME="+filepath.Join(o.ConfigDir, "state"))
	}
	cmd.Env = Environ(append(env, o.Env...)...)
	cmd.Dir = o.Dir
	// Its own process group, so that Kill reaches whatever serve started
	// in it. Pdeathsig: a test binary or driver that crashes (no cleanup
	// runs) must not leave a daemon behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = pipeDrainDelay

	serving := make(chan string, 1)
	d := &Daemon{
		Token:     o.Token,
		ConfigDir: o.ConfigDir,
		cmd:       cmd,
		grace:     cmp.Or(o.StopGrace, DefaultStopGrace),
		done:      make(chan struct{}),
	}
	d.log = &logLines{changed: make(chan struct{}), onLine: func(line string) {
		if kv := ParseLogLine(line); kv["msg"] == "switchboard serving" {
			select {
			case serving <- kv["addr"]:
			default:
			}
		}
		if o.OnLine != nil {
			o.OnLine(line)
		}
	}}
	// One writer for both: exec then calls Write from one goroutine at a
	// time, and the lines of both streams keep their order.
	cmd.Stdout, cmd.Stderr = d.log, d.log
	d.Started = time.Now()
	if err := cmd.Start(); err != nil {
		removeConfig()
		return nil, fmt.Errorf("starting switchboard serve: %w", err)
	}
	d.PID = cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		removeConfig()
		close(d.done)
	}()

	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.StartTimeout, DefaultStartTimeout))
	defer cancel()
	err := d.waitReady(ctx, serving)
	if err == nil && d.Token == "" && o.TokenFile != "" {
		if d.Token, err = client.ReadTokenFile(o.TokenFile); err != nil {
			err = fmt.Errorf("serves, but its --token-file cannot be read: %w", err)
		}
	}
	if err == nil && d.Token == "" && !o.NoAuth {
		// Written before serve listens, so before it logged its address.
		d.Token, err = client.ReadCredential(filepath.Join(o.ConfigDir, filepath.FromSlash(client.CredentialFile)))
		if err != nil {
			err = fmt.Errorf("serves, but its credential cannot be read: %w", err)
		}
	}
	if err != nil {
		d.Kill()
		return nil, fmt.Errorf("switchboard serve (pid %d) %w; the end of its log:\n%s", d.PID, err, d.log.tail(40))
	}
	return d, nil
}

// waitReady waits for the address serve logs, then polls GET /healthz until
// it answers 200.
func (d *Daemon) waitReady(ctx context.Context, serving <-chan string) error {
	select {
	case addr := <-serving:
		u, err := loopbackURL(addr)
		if err != nil {
			return err
		}
		d.URL, d.MCPURL = u, u+"/mcp"
	case <-d.done:
		return fmt.Errorf("exited before serving (%s)", d.cmd.ProcessState)
	case <-ctx.Done():
		return fmt.Errorf("logged no \"switchboard serving\" line: %w", context.Cause(ctx))
	}
	// No keep-alive: an idle connection's goroutines would outlive the
	// start, and tests check for leaked goroutines.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				d.Ready = time.Now()
				return nil
			}
		}
		select {
		case <-d.done:
			return fmt.Errorf("exited before its API answered (%s)", d.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("serves on %s, but GET /healthz did not answer 200: %w", d.URL, context.Cause(ctx))
		case <-time.After(healthPoll):
		}
	}
}

// loopbackURL turns the address serve logs (http://HOST:PORT) into the URL
// the harness uses: through 127.0.0.1 if serve listens on every address,
// refused if it listens on another interface only.
func loopbackURL(addr string) (string, error) {
	u, err := url.Parse(addr)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("logged an address that is not http://HOST:PORT: %q", addr)
	}
	host := u.Hostname()
	switch ip := net.ParseIP(host); {
	case ip == nil:
		return "", fmt.Errorf("logged a host that is not an IP address: %q", addr)
	case ip.IsUnspecified():
		host = "127.0.0.1"
	case !ip.IsLoopback():
		return "", fmt.Errorf("listens on %s; the harness talks to loopback only", addr)
	}
	return "http://" + net.JoinHostPort(host, u.Port()), nil
}

// Stop sends SIGTERM to the daemon (its pid: serve stops the servers it
// started itself) and waits up to Options.StopGrace for it to exit; after
// that it kills the process group (see [Daemon.Kill]) and returns an error
// wrapping [ErrStopTimeout]. It returns nil if the daemon exited with
// status 0, an error naming the status otherwise. Only the first call
// acts; later ones return its result. A daemon that already exited or was
// killed is not signalled.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() { d.stopErr = d.stop() })
	return d.stopErr
}

func (d *Daemon) stop() error {
	select {
	case <-d.done:
	default:
		if !d.signalAndWait(syscall.SIGTERM) {
			return fmt.Errorf("%w within %v (pid %d); killed", ErrStopTimeout, d.grace, d.PID)
		}
	}
	if st := d.cmd.ProcessState; !st.Success() {
		return fmt.Errorf("switchboard serve (pid %d) exited with %s", d.PID, st)
	}
	return nil
}

// signalAndWait sends sig to the daemon and waits until it has been
// reaped; if its stop grace passes first it is killed, and false returned.
func (d *Daemon) signalAndWait(sig syscall.Signal) bool {
	_ = syscall.Kill(d.PID, sig)
	t := time.NewTimer(d.grace)
	defer t.Stop()
	select {
	case <-d.done:
		return true
	case <-t.C:
		d.Kill()
		return false
	}
}

// Kill sends SIGKILL to the daemon's process group, as a crash would, and
// waits until the daemon has been reaped. It is safe to call more than once
// and after the daemon exited (then it does nothing: its pid may be another
// process's by now).
func (d *Daemon) Kill() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = syscall.Kill(-d.PID, syscall.SIGKILL)
	<-d.done
}

// ErrQuit is what [Daemon.Stop] returns (wrapped) after [Daemon.Quit].
var ErrQuit = errors.New("switchboard serve was quit (SIGQUIT) for the stacks of its goroutines")

// Quit sends SIGQUIT to the daemon, on which the Go runtime writes the
// stack of every goroutine to stderr and exits with status 2 (serve does
// not catch the signal), waits until it has been reaped (killed after its
// stop grace), and returns the stacks: what the daemon wrote after the
// signal. It is for a test that must see where serve waits, at the moment
// it waits (a call that does not return). Stop, later, returns an error
// wrapping [ErrQuit]. A daemon stopped or exited already is not
// signalled, and Quit returns "".
//
// The servers serve started end with it (their Pdeathsig); nothing else
// of its process group is signalled.
func (d *Daemon) Quit() string {
	var dump string
	d.stopOnce.Do(func() {
		select {
		case <-d.done:
			d.stopErr = d.stop()
			return
		default:
		}
		from := d.log.len()
		d.signalAndWait(syscall.SIGQUIT)
		lines, _ := d.log.since(from)
		dump = strings.Join(lines, "\n")
		d.stopErr = fmt.Errorf("%w (pid %d, %s)", ErrQuit, d.PID, d.cmd.ProcessState)
	})
	return dump
}

// Client returns a client of the daemon's API that sends its credential
// ([Daemon.Token]); o may be nil (see client.New). The caller closes it.
func (d *Daemon) Client(o *client.Options) *client.Client {
	c, err := client.New(d.URL, d.Token, o)
	if err != nil {
		panic(err) // d.URL is http://IP:PORT, which client.New takes
	}
	return c
}

// Transport returns a RoundTripper that sends the daemon's credential
// ([Daemon.Token], if any) on every request it passes to next
// (http.DefaultTransport if nil): for a client of [Daemon.MCPURL] or any
// route the API's client does not cover.
func (d *Daemon) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if d.Token == "" {
		return next
	}
	return client.Bearer(d.Token, next)
}

// Done is closed once the daemon has exited and been reaped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// ExitCode returns the daemon's exit status once it has been reaped; -1
// while it runs or if a signal ended it.
func (d *Daemon) ExitCode() int {
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Logs returns everything the daemon wrote to stdout and stderr so far
// (serve logs to stderr). Once [Daemon.Done] is closed, it is complete.
func (d *Daemon) Logs() string { return d.log.String() }

// WaitLog waits until the daemon logs a line containing substr and returns
// the first such line (one logged before the call counts). It fails if the
// daemon exits first, or when ctx ends; a ctx without a deadline gets
// DefaultWaitTimeout.
func (d *Daemon) WaitLog(ctx context.Context, substr string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWaitTimeout)
		defer cancel()
	}
	exited := false
	for seen := 0; ; {
		lines, changed := d.log.since(seen)
		for _, l := range lines {
			if strings.Contains(l, substr) {
				return l, nil
			}
		}
		seen += len(lines)
		if exited {
			return "", fmt.Errorf("switchboard serve (pid %d) exited (%s) without logging %q", d.PID, d.cmd.ProcessState, substr)
		}
		select {
		case <-changed:
		case <-d.done: // look at its last lines once more
			exited = true
		case <-ctx.Done():
			return "", fmt.Errorf("switchboard serve (pid %d) logged no %q: %w", d.PID, substr, context.Cause(ctx))
		}
	}
}

// Environ returns this process's environment without any SWITCHBOARD_*
// variable, so that a developer's token, database or address cannot change
// what a test does, followed by extra (a later entry wins).
func Environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// ParseLogLine splits a line of slog's text format, serve's log (key=value
// pairs, values quoted when they contain spaces), into its pairs. It stops
// at the first part that is not a pair, and returns none for a line that
// is not slog's (a GC trace).
//
// A slog line starts with time=; what comes before it is skipped. The Go
// runtime writes its GC trace (GODEBUG=gctrace=1) to the same stderr a
// piece at a time, so a log line written meanwhile lands inside a trace
// line, e.g. "gc 9 @0.067s 18%: 0.13+1.3+time=... msg=...".
func ParseLogLine(line string) map[string]string {
	out := map[string]string{}
	if i := strings.Index(line, "time="); i > 0 {
		line = line[i:]
	}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.Contains(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[k] = v
		line = rest
	}
	return out
}

// logLines is the daemon's output: an io.Writer that keeps every line,
// hands each complete one to onLine, and wakes the waiters of WaitLog.
type logLines struct {
	onLine func(string) // set before the first Write

	mu      sync.Mutex
	lines   []string
	partial []byte
	changed chan struct{} // closed and replaced whenever lines grow
}

// Write implements io.Writer.
func (w *logLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.partial = append(w.partial, p...)
	first := len(w.lines)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, strings.TrimSuffix(string(w.partial[:i]), "\r"))
		w.partial = w.partial[i+1:]
	}
	fresh := w.lines[first:len(w.lines):len(w.lines)]
	if len(fresh) > 0 {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
	// Outside the lock: onLine may take its own.
	for _, l := range fresh {
		w.onLine(l)
	}
	return len(p), nil
}

// since returns the lines from index i on, and a channel closed when more
// arrive.
func (w *logLines) since(i int) ([]string, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines[i:len(w.lines):len(w.lines)], w.changed
}

// String returns everything written so far, an unfinished last line
// included.
func (w *logLines) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, l := range w.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.Write(w.partial)
	return b.String()
}

// tail returns the last n lines written.
func (w *logLines) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines[max(0, len(w.lines)-n):], "\n")
}

// len returns how many lines were written.
func (w *logLines) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lines)
}
