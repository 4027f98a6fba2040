package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// A second serve on the SQLite file of a running one is refused, naming
// the first one's pid; on the old code it started every server a second
// time. A lock file left by a serve that died (the pid of a process that
// has exited) is taken over.
func TestSecondServeOnOneDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "switchboard.db")
	first := daemontest.Start(t, daemontest.Options{DB: "sqlite:" + db, StopGrace: serveStopWait})

	second, err := daemontest.StartProcess(context.Background(), daemontest.Options{Binary: daemontest.Binary(t),
		DB: "sqlite:" + db, Dir: t.TempDir(), ConfigDir: t.TempDir()})
	if err == nil {
		second.Kill()
		t.Fatalf("a second serve on %s started (pid %d) beside pid %d", db, second.PID, first.PID)
	}
	t.Logf("second serve: %v", err)
	for _, want := range []string{
		fmt.Sprintf("the database %s is in use by another process (pid %d: switchboard serve)", db, first.PID),
		db + ".lock", "give this serve another --db",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the second serve's failure lacks %q", want)
		}
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	// A lock of a dead pid, as a serve killed with SIGKILL leaves it.
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+".lock", []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := daemontest.Start(t, daemontest.Options{DB: "sqlite:" + db, StopGrace: serveStopWait})
	lock, err := os.ReadFile(db + ".lock")
	if err != nil || strings.TrimSpace(string(lock)) != strconv.Itoa(third.PID) {
		t.Errorf("the lock after a takeover holds %q (%v), want pid %d", lock, err, third.PID)
	}
	if err := third.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A serve that cannot bind its port says so on stderr, with what to do,
// and exits non-zero (the walk-through's second serve did, into a log
// file, and every later step reached the first).
func TestServeOnABusyPortSaysSoAndFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), verbTimeout) // kills it by its pid if it serves
	defer cancel()
	cmd := exec.CommandContext(ctx, daemontest.Binary(t), "serve", "--listen", busy.Addr().String(), "--db", "sqlite:"+filepath.Join(dir, "x.db"))
	cmd.Env = daemontest.Environ("XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("serve on a busy port: %v, want a non-zero exit; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"listening on " + busy.Addr().String(), "address already in use",
		"perhaps another switchboard serve", "give --listen another address"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
