package conformance

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// killAfter is how long a process has between SIGTERM and SIGKILL.
const killAfter = 5 * time.Second

// process is a child started in its own process group and stopped by its
// pid, never by name.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	err  error         // Wait's result, set before done is closed
	once sync.Once
}

// startProcess starts cmd in a new process group; the test's cleanup
// stops it if it is still running.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p, err := spawn(name, cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

func spawn(name string, cmd *exec.Cmd) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Bounds the wait for the output copiers should a grandchild keep a
	// pipe open after the process is gone.
	cmd.WaitDelay = killAfter
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, SIGKILL after killAfter, and
// reaps the process. It is safe to call more than once.
func (p *process) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(killAfter):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		// Whatever the leader left behind in its group goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// killOrphan stops a process group Switchboard started (a stdio
// upstream) if it outlived Switchboard, which only happens when
// Switchboard itself had to be killed. The command line is checked first,
// so that a recycled pid is left alone.
func killOrphan(pid int, command string) {
	if pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !strings.HasPrefix(string(cmdline), command+"\x00") {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(killAfter)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// lineWriter keeps everything written to it and hands each complete line
// to onLine, if set.
type lineWriter struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	onLine  func(string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(b)
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if w.onLine != nil {
			w.onLine(line)
		}
	}
	return len(b), nil
}

// String returns everything written so far.
func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// tail returns the last n lines written.
func (w *lineWriter) tail(n int) string {
	return lastLines(w.String(), n)
}

// freeAddr returns a loopback address with a port that was free a moment
// ago, for a child that cannot be told to listen on port 0.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitListening waits until addr accepts connections, failing if p exits
// first or timeout passes.
func waitListening(t *testing.T, p *process, addr string, out *lineWriter, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if p.exited() {
			t.Fatalf("%s exited before listening on %s (%v):\n%s", p.name, addr, p.err, out.tail(20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after %v:\n%s", p.name, addr, timeout, out.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
