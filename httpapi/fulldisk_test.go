package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// fullDiskDir names, in the child that TestAFullDiskIsSaidInWords starts,
// the directory where a 1 MiB tmpfs is mounted.
const fullDiskDir = "SWITCHBOARD_TEST_FULL_DISK_DIR"

// A database whose disk is full answers in words ("the database's disk is
// full"), not the driver's ("sqlite: create ...: database or disk is full
// (13)"), with the code internal. The disk is real: a 1 MiB tmpfs mounted
// in a mount namespace of the test's own (unshare -m, as root), which
// ends with the child process that runs this test in it.
func TestAFullDiskIsSaidInWords(t *testing.T) {
	dir := os.Getenv(fullDiskDir)
	if dir == "" {
		if os.Geteuid() != 0 {
			t.Skip("mounting a small tmpfs needs root")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("no unshare")
		}
		dir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, unshare, "-m", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o size=1m switchboard-test "$0" && exec "$@"`, dir,
			os.Args[0], "-test.run=^TestAFullDiskIsSaidInWords$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), fullDiskDir+"="+dir)
		out, err := cmd.CombinedOutput()
		t.Logf("in its own mount namespace:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestAFullDiskIsSaidInWords") {
			t.Fatalf("the test in a mount namespace with a full disk: %v", err)
		}
		return
	}

	e := newEnv(t, "sqlite:"+filepath.Join(dir, "switchboard.db"), "")
	big := strings.Repeat("x", 100<<10)
	for i := range 30 {
		cfg := map[string]any{"name": "s" + string(rune('a'+i)), "transport": "stdio", "command": "/bin/true", "enabled": false,
			"env": map[string]string{"BIG": big}}
		var eb api.ErrorBody
		st, body := e.do("POST", "/api/v1/servers", cfg, &eb)
		if st == 201 {
			continue
		}
		if st != 500 || eb.Error.Code != sb.CodeInternal || !strings.HasPrefix(eb.Error.Message, "the database's disk is full") ||
			strings.Contains(eb.Error.Message, "sqlite") || strings.Contains(eb.Error.Message, "(13)") {
			t.Fatalf("create %d on a full disk: %d %s; want 500, code internal, saying the database's disk is full in words", i+1, st, body)
		}
		t.Logf("create %d: %d %s", i+1, st, body)
		return
	}
	t.Fatal("30 servers of 100 KiB each fit on a 1 MiB disk")
}
