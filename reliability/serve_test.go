package reliability

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// This file runs `switchboard serve` as a real process: built once per test
// process with `go build`, started in its own process group on
// 127.0.0.1:0, and stopped by pid.

var switchboardBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// switchboardBinary returns the path of a switchboard binary built from
// this module, building it the first time.
func switchboardBinary(t testing.TB) string {
	t.Helper()
	switchboardBin.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			switchboardBin.err = err
			return
		}
		dir, err := os.MkdirTemp("", "switchboard-bin-")
		if err != nil {
			switchboardBin.err = err
			return
		}
		switchboardBin.dir = dir
		switchboardBin.path = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", switchboardBin.path, "./cmd/switchboard")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			switchboardBin.err = fmt.Errorf("go build ./cmd/switchboard: %v\n%s", err, out)
		}
	})
	if switchboardBin.err != nil {
		t.Fatal(switchboardBin.err)
	}
	return switchboardBin.path
}

// removeSwitchboardBinary deletes the binary built by switchboardBinary;
// TestMain calls it after every test has run.
func removeSwitchboardBinary() {
	if switchboardBin.dir != "" {
		os.RemoveAll(switchboardBin.dir)
	}
}

// moduleRoot is the directory holding go.mod, as the go command sees it
// from the package directory go test runs in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module (go env GOMOD = %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// daemon is a running `switchboard serve`.
type daemon struct {
	URL  string // http://127.0.0.1:PORT
	PID  int    // also its process group
	cmd  *exec.Cmd
	errb *testserver.Buffer
	done chan struct{} // closed once reaped
}

// servingLine is what serve logs once its listener is up, e.g.
// `... msg="switchboard serving" addr=http://127.0.0.1:41234 db=...`.
var servingLine = regexp.MustCompile(`msg="switchboard serving" addr=(http://127\.0\.0\.1:\d+)`)

// startServe runs `switchboard serve` on dsn, on 127.0.0.1:0, and waits up
// to 20 s for it to serve. A cleanup kills its process group.
func startServe(t *testing.T, dsn string) *daemon {
	t.Helper()
	cmd := exec.Command(switchboardBinary(t), "serve", "--listen", "127.0.0.1:0", "--db", dsn, "--log-level", "info")
	// Nothing of the caller's SWITCHBOARD_* environment (a token, another
	// database) may change what is tested.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	d := &daemon{cmd: cmd, errb: &testserver.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = d.errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting switchboard serve: %v", err)
	}
	d.PID = cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(d.kill)

	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := servingLine.FindStringSubmatch(d.errb.String()); m != nil {
			d.URL = m[1]
			return d
		}
		select {
		case <-d.done:
			t.Fatalf("switchboard serve exited (%v) before serving; stderr:\n%s", cmd.ProcessState, d.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("switchboard serve did not serve within 20s; stderr:\n%s", d.errb.String())
		}
	}
}

// kill sends SIGKILL to the daemon's process group and waits until it is
// reaped. Safe to call more than once.
func (d *daemon) kill() {
	syscall.Kill(-d.PID, syscall.SIGKILL)
	<-d.done
}

// stop asks the daemon to shut down with SIGTERM and returns its exit
// status, or fails after timeout.
func (d *daemon) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	syscall.Kill(d.PID, syscall.SIGTERM)
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("switchboard serve did not stop within %v of SIGTERM; stderr:\n%s", timeout, d.errb.String())
		return 0
	}
}
