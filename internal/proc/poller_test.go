package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitChan waits for c, failing the test after a generous bound (a
// liveness guard, not a timing assertion).
func waitChan(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not within 30s", what)
	}
}

// startChild starts sh -c script in its own process group and stops it
// when the test ends, by its pid.
// Each setup runs on the command before it starts.
func startChild(t *testing.T, script string, setup ...func(*exec.Cmd)) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for _, f := range setup {
		f(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	return cmd
}

// onExitReaps watches cmd on p; the returned channel is closed once the
// Poller reported the exit and the callback reaped the child, with its
// exit error in *exitErr.
func onExitReaps(p *Poller, cmd *exec.Cmd, exitErr *error) <-chan struct{} {
	done := make(chan struct{})
	p.OnExit(cmd.Process.Pid, func() {
		*exitErr = cmd.Wait() // the child has exited: this does not block
		close(done)
	})
	return done
}

// TestPollerReportsExitsInAnyOrder: children exiting in an order unrelated
// to their registration are each reported once, with their own status.
func TestPollerReportsExitsInAnyOrder(t *testing.T) {
	var p Poller
	const n = 40
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, n)
	errs := make([]error, n)
	done := make([]<-chan struct{}, n)
	release := func(i int) {
		if err := os.WriteFile(fmt.Sprintf("%s/%d", dir, i), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		// Each exits with its own code once its file appears.
		cmds[i] = startChild(t, fmt.Sprintf("while [ ! -e %s/%d ]; do sleep 0.02; done; exit %d", dir, i, i%7+1))
		done[i] = onExitReaps(&p, cmds[i], &errs[i])
	}
	for _, i := range []int{17, 3, 39, 0, 25} {
		release(i)
		waitChan(t, done[i], fmt.Sprintf("child %d", i))
	}
	for i := n - 1; i >= 0; i-- { // the rest, in reverse
		release(i)
	}
	for i := range n {
		waitChan(t, done[i], fmt.Sprintf("child %d", i))
		var ee *exec.ExitError
		if !errors.As(errs[i], &ee) || ee.ExitCode() != i%7+1 {
			t.Errorf("child %d: exit error %v, want exit status %d", i, errs[i], i%7+1)
		}
	}
	awaitIdle(t, &p)
}

// TestPollerExitBeforeRegistration: a child that is gone (unreaped) before
// OnExit is called is reported at once, and its signal is kept.
func TestPollerExitBeforeRegistration(t *testing.T) {
	var p Poller
	cmd := startChild(t, "kill -9 $$")
	// Until the child is a zombie; nothing has reaped it.
	for i := 0; i < 2000 && Alive(cmd.Process.Pid); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	var err error
	waitChan(t, onExitReaps(&p, cmd, &err), "the exit")
	if err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("exit error %v, want signal: killed", err)
	}
	awaitIdle(t, &p)
}

// TestPollerStartsAgainAfterIdle: the goroutine ends once nothing is
// watched (goleak checks at the end of the package) and a later watch
// starts it again.
func TestPollerStartsAgainAfterIdle(t *testing.T) {
	var p Poller
	for round := range 3 {
		var err error
		done := onExitReaps(&p, startChild(t, "exit 3"), &err)
		waitChan(t, done, fmt.Sprintf("round %d", round))
		awaitIdle(t, &p)
	}
}

// TestPollerDrainsPipes: each pipe's bytes reach its own writer in order,
// EOF is reported once every writer closed it (a grandchild holding it
// keeps it open), and a child's exit and its pipe's end are independent.
func TestPollerDrainsPipes(t *testing.T) {
	var p Poller
	const n = 8
	outs := make([]*lockedBuffer, n)
	eofs := make([]chan struct{}, n)
	exits := make([]<-chan struct{}, n)
	errs := make([]error, n)
	for i := range n {
		r, w := nonblockingPipe(t)
		outs[i], eofs[i] = &lockedBuffer{}, make(chan struct{})
		// Enough to take several reads; the grandchild keeps the pipe open
		// a while after the child exits.
		script := fmt.Sprintf("head -c 20000 /dev/zero | tr '\\0' '%c'; (sleep 0.3; echo end) & exit 0", 'a'+i)
		cmd := startChild(t, script, func(cmd *exec.Cmd) { cmd.Stdout = w })
		w.Close()
		p.Drain(r, outs[i], func() { close(eofs[i]) })
		exits[i] = onExitReaps(&p, cmd, &errs[i])
	}
	for i := range n {
		waitChan(t, exits[i], fmt.Sprintf("exit %d", i))
		waitChan(t, eofs[i], fmt.Sprintf("EOF %d", i))
		want := strings.Repeat(string(rune('a'+i)), 20000) + "end\n"
		if got := outs[i].String(); got != want {
			t.Errorf("pipe %d: %d bytes, want %d (%q...)", i, len(got), len(want), got[:min(len(got), 20)])
		}
	}
	awaitIdle(t, &p)
}

// A drained pipe rests: what its writer writes meanwhile, a line at a time
// as a server that logs every call writes its stderr, waits in the pipe and
// is read in one drain when the rest ends (with a rest of an hour here,
// when the child exits), not a line at a time; nothing is lost, and the
// pipe's end is still reported. (The rest ending by itself is
// TestPollerDrainsPipes' grandchild's last line.)
func TestPollerLetsADrainedPipeRest(t *testing.T) {
	defer func(d time.Duration) { pipeRest = d }(pipeRest)
	pipeRest = time.Hour
	var p Poller
	r, w := nonblockingPipe(t)
	out := &countingBuffer{wrote: make(chan struct{}, 1)}
	eof := make(chan struct{})
	p.Drain(r, out, func() { close(eof) })
	const lines = 200
	var exitErr error
	gate, exited := startGatedChild(t, &p, w, fmt.Sprintf(`echo first; read x; i=0; while [ $i -lt %d ]; do echo "call $i"; i=$((i+1)); done`, lines), &exitErr)
	waitChan(t, out.wrote, "the first line") // drained: the pipe rests
	gate.Close()                             // the child writes its lines and exits
	waitChan(t, exited, "exit")
	waitChan(t, eof, "EOF")
	var want strings.Builder
	want.WriteString("first\n")
	for i := range lines {
		fmt.Fprintf(&want, "call %d\n", i)
	}
	if got := out.String(); got != want.String() || exitErr != nil {
		t.Fatalf("read %d bytes (exit %v), want %d", len(got), exitErr, want.Len())
	}
	if n := out.writes(); n != 2 {
		t.Errorf("%d lines written during a rest were read in %d drains, want one (and one for the first line)", lines, n-1)
	}
	awaitIdle(t, &p)
}

// A child's exit ends the rest of every pipe: its stderr's last lines and
// end are read at once (with a rest of an hour here, they would otherwise
// not be read within the test).
func TestPollerReadsAPipeAtOnceWhenAChildExits(t *testing.T) {
	defer func(d time.Duration) { pipeRest = d }(pipeRest)
	pipeRest = time.Hour
	var p Poller
	r, w := nonblockingPipe(t)
	out := &countingBuffer{wrote: make(chan struct{}, 1)}
	eof := make(chan struct{})
	p.Drain(r, out, func() { close(eof) })
	var exitErr error
	gate, exited := startGatedChild(t, &p, w, "echo first; read x; echo last", &exitErr)
	waitChan(t, out.wrote, "the first line") // drained: the pipe rests
	gate.Close()                             // the child writes its last line and exits
	waitChan(t, exited, "exit")
	waitChan(t, eof, "EOF")
	if got := out.String(); got != "first\nlast\n" || exitErr != nil {
		t.Fatalf("read %q (exit %v), want both lines", got, exitErr)
	}
	awaitIdle(t, &p)
}

// startGatedChild starts script with its stdout on w (closed here), and
// its stdin, the gate it reads from before going on, returned; exited is
// closed once p has reaped it, with its error in exitErr.
func startGatedChild(t *testing.T, p *Poller, w *os.File, script string, exitErr *error) (gate io.WriteCloser, exited <-chan struct{}) {
	t.Helper()
	cmd := startChild(t, script, func(cmd *exec.Cmd) {
		cmd.Stdout = w
		var err error
		if gate, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	})
	w.Close()
	return gate, onExitReaps(p, cmd, exitErr)
}

// countingBuffer is a lockedBuffer that counts its writes, and says on
// wrote that one happened.
type countingBuffer struct {
	lockedBuffer
	n     int
	wrote chan struct{}
}

func (b *countingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	n, err := b.lockedBuffer.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *countingBuffer) writes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// nonblockingPipe returns a pipe whose read end is a raw non-blocking
// descriptor (for Drain) and whose write end is a blocking *os.File.
func nonblockingPipe(t *testing.T) (int, *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "pipe")
}

// awaitIdle waits until p's goroutine has ended.
func awaitIdle(t *testing.T, p *Poller) {
	t.Helper()
	for range 2000 {
		p.mu.Lock()
		idle := !p.running && len(p.watches) == 0
		p.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the poller is still running with nothing to watch")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
