package testserver

// This file is the harness for tests in other packages: build the server
// binary once, start it over HTTP as a real process in its own process
// group, and read its events file.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

// mainPackage is the server's main package, relative to the module root.
const mainPackage = "./internal/testserver/cmd/testserver"

// startTimeout bounds how long StartHTTP waits for the LISTEN line.
const startTimeout = 10 * time.Second

// pipeDrainDelay bounds how long reaping waits for stdout/stderr to close
// after the process exited (a leaked grandchild could hold them open).
const pipeDrainDelay = 2 * time.Second

var built = gobuild.Once{Pkg: mainPackage, Name: "testserver"}

// Binary returns the absolute path of the testserver binary, building it
// with "go build" the first time it is called in this test process. The
// binary lives in a temporary directory shared by all tests of the process
// (not a test's TempDir, which would vanish with that test); call
// [RemoveBinary] from TestMain to delete it. Code without a testing.TB
// (the benchmarks) uses [Build].
func Binary(tb testing.TB) string {
	tb.Helper()
	path, err := built.Path()
	if err != nil {
		tb.Fatalf("building testserver: %v", err)
	}
	return path
}

// Build builds the testserver as dir/testserver and returns its absolute
// path. The caller owns dir.
func Build(dir string) (string, error) {
	return gobuild.Build(mainPackage, filepath.Join(dir, "testserver"))
}

// RemoveBinary deletes the binary built by [Binary], if any. It is meant for
// TestMain, after m.Run (no test may start the server afterwards), e.g.
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
//			testserver.RemoveBinary()
//			os.Exit(code)
//		}))
//	}
func RemoveBinary() { built.Remove() }

// Command returns an unstarted command running the testserver with args
// (stdio unless args say otherwise) in its own process group, e.g. for
// mcp.CommandTransport. Whoever starts it must also reap it
// (CommandTransport does, on Close); a cleanup SIGKILLs the group, leaked
// grandchildren included, if it was started.
func Command(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(Binary(tb), args...)
	// Pdeathsig: a test binary that crashes (no Cleanup runs) must not
	// leave servers behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = pipeDrainDelay
	tb.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return cmd
}

// Process is a running testserver started by [StartHTTP].
type Process struct {
	URL     string // Streamable HTTP endpoint: BaseURL + "/mcp"
	BaseURL string // e.g. "http://127.0.0.1:41234"
	PID     int    // also the process group id

	cmd    *exec.Cmd
	stdout *Buffer
	stderr *Buffer
	done   chan struct{} // closed once the process has been reaped
}

// StartHTTP starts the testserver with "-transport http -listen 127.0.0.1:0"
// followed by args (later flags win), waits up to 10 s for its LISTEN line
// and returns it. The process runs in its own process group; a cleanup kills
// that group (grandchildren included) and reaps the process.
func StartHTTP(tb testing.TB, args ...string) *Process {
	tb.Helper()
	argv := append([]string{"-transport", "http", "-listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(Binary(tb), argv...)
	// A process group of its own lets Kill reach the grandchildren too.
	// Pdeathsig: a test binary that crashes (no Cleanup runs) must not
	// leave servers behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = pipeDrainDelay

	listening := make(chan string, 1)
	p := &Process{
		cmd: cmd,
		stdout: &Buffer{OnLine: func(line string) {
			if url, ok := strings.CutPrefix(line, "LISTEN "); ok {
				select {
				case listening <- url:
				default:
				}
			}
		}},
		stderr: &Buffer{},
		done:   make(chan struct{}),
	}
	// exec copies both pipes into the buffers until the process exits, so
	// they never fill up and block the server.
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting testserver: %v", err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(p.Kill)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case url := <-listening:
		p.BaseURL = url
		p.URL = url + "/mcp"
		return p
	case <-p.done:
		tb.Fatalf("testserver %v exited before listening (%s); stderr:\n%s", argv, p.cmd.ProcessState, p.Stderr())
	case <-timer.C:
		p.Kill()
		tb.Fatalf("testserver %v printed no LISTEN line within %v; stderr:\n%s", argv, startTimeout, p.Stderr())
	}
	return nil // unreachable
}

// Kill sends SIGKILL to the process group and waits until the process has
// been reaped. It is safe to call more than once and after the process
// exited by itself (a leaked grandchild may still be alive in the group).
func (p *Process) Kill() {
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the server process only (not its group).
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(p.PID, sig)
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit and returns its exit
// status (-1 if a signal killed it). It fails the test on timeout.
func (p *Process) Wait(tb testing.TB, timeout time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		tb.Fatalf("testserver pid %d did not exit within %v; stderr:\n%s", p.PID, timeout, p.Stderr())
		return 0
	}
}

// Stderr returns everything the server wrote to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stdout returns everything the server wrote to stdout so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Buffer is an io.Writer, safe for concurrent use, that keeps everything
// written to it and calls OnLine, if set, for every complete line. Tests use
// it to collect a process's output or a logger's lines.
type Buffer struct {
	OnLine func(string) // set before the first Write

	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.OnLine == nil {
		return len(p), nil
	}
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		b.OnLine(strings.TrimSuffix(string(b.partial[:i]), "\r"))
		b.partial = b.partial[i+1:]
	}
	return len(p), nil
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// EventsFile returns a fresh path for -events inside tb's TempDir.
func EventsFile(tb testing.TB) string {
	return filepath.Join(tb.TempDir(), "events.jsonl")
}

// ReadEvents returns the events recorded in path so far, oldest first; none
// if the file does not exist yet. A line still being written is left for
// the next call.
func ReadEvents(tb testing.TB, path string) []Event {
	tb.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatalf("reading events: %v", err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var events []Event
	for line := range bytes.Lines(data) {
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			tb.Fatalf("events file %s: bad line %q: %v", path, line, err)
		}
		events = append(events, e)
	}
	return events
}

// WaitEvent polls path every 10 ms until an event satisfies pred and returns
// it, or fails the test (listing the events seen) after timeout. Like every
// Fatal, call it from the test's own goroutine.
func WaitEvent(tb testing.TB, path string, pred func(Event) bool, timeout time.Duration) Event {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		events := ReadEvents(tb, path)
		for _, e := range events {
			if pred(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			var dump strings.Builder
			for _, e := range events {
				line, _ := json.Marshal(e)
				dump.Write(line)
				dump.WriteByte('\n')
			}
			tb.Fatalf("no matching event in %s within %v; events so far:\n%s", path, timeout, dump.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
