package daemontest

// This file wraps the core for tests: one binary per test process, and
// daemons and commands that a cleanup stops.

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

var built = gobuild.Once{Pkg: mainPackage, Name: "switchboard"}

// Binary returns the absolute path of the switchboard binary, building it
// with [Build] the first time it is called in this test process. The binary
// lives in a temporary directory shared by all tests of the process (not a
// test's TempDir, which would vanish with that test); call [RemoveBinary]
// from TestMain to delete it. A package whose TestMain cannot call it
// builds into a test's TempDir with [Build] instead.
func Binary(tb testing.TB) string {
	tb.Helper()
	path, err := built.Path()
	if err != nil {
		tb.Fatalf("building switchboard: %v", err)
	}
	return path
}

// RemoveBinary deletes the binary built by [Binary], if any. It is meant for
// TestMain, after m.Run (no test may start the daemon afterwards), e.g.
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
//			daemontest.RemoveBinary()
//			os.Exit(code)
//		}))
//	}
func RemoveBinary() { built.Remove() }

// Start starts a daemon with [StartProcess], failing the test if it does
// not come up. Empty Options.Binary is [Binary]'s; empty Options.DB is a
// fresh SQLite file, empty Options.Dir a directory and empty
// Options.ConfigDir another, all in tb's TempDir. A cleanup stops the daemon ([Daemon.Stop]) if the test has not,
// logs why if that failed, and logs the end of the daemon's log if the
// test failed; a test that requires a clean exit calls Stop itself.
func Start(tb testing.TB, o Options) *Daemon {
	tb.Helper()
	if o.Binary == "" {
		o.Binary = Binary(tb)
	}
	if o.DB == "" || o.Dir == "" || o.ConfigDir == "" {
		dir := tb.TempDir()
		if o.DB == "" {
			o.DB = "sqlite:" + filepath.Join(dir, "switchboard.db")
		}
		if o.Dir == "" {
			o.Dir = dir
		}
		if o.ConfigDir == "" {
			o.ConfigDir = filepath.Join(dir, "config")
		}
	}
	d, err := StartProcess(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Stop(); err != nil {
			tb.Logf("stopping the daemon: %v", err)
		}
		if tb.Failed() {
			tb.Logf("switchboard serve (pid %d), the end of its log:\n%s", d.PID, d.log.tail(40))
		}
	})
	return d
}

// Command returns an unstarted command running the switchboard binary
// ([Binary]) with args, in the environment of [Environ], in its own process
// group: e.g. "stdio" for mcp.CommandTransport. Whoever starts it must also
// reap it (CommandTransport does, on Close); a cleanup SIGKILLs the group,
// leaked grandchildren included, if it was started.
func Command(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(Binary(tb), args...)
	cmd.Env = Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = pipeDrainDelay
	tb.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return cmd
}
