package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.OpenFunc {
		path := filepath.Join(t.TempDir(), "switchboard.db")
		return func() (switchboard.Store, error) { return Open(context.Background(), path) }
	})
}

// A database file that exists already with a world-readable mode (made by
// hand, or by an older version) is made private on open.
func TestExistingWorldReadableFileIsMadePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	s, err = Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("the database kept mode %#o, want 0600", mode)
	}
}

func TestFileModeAndPragmas(t *testing.T) {
	// A permissive umask, as a service might run with: the files must
	// still be private.
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)

	path := filepath.Join(t.TempDir(), "modes.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(t.Context(), &switchboard.ServerConfig{Name: "x", Transport: "stdio", Command: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), mode)
		}
	}
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"synchronous":  "1", // NORMAL
		"foreign_keys": "1",
		"busy_timeout": "5000",
	} {
		var got string
		if err := s.db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("pragma %s: %v", pragma, err)
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("pragma %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestOddPath(t *testing.T) {
	// '?', '#', '%' and spaces must be part of the file name, not URI syntax.
	dir := filepath.Join(t.TempDir(), "a dir?x=1#frag%41")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "odd name.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(t.Context(), &switchboard.ServerConfig{Name: "x", Transport: "stdio", Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) == 0 || names[0] != "odd name.db" {
		t.Errorf("directory holds %q, want the database as %q", names, "odd name.db")
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(t.Context(), ""); err == nil {
		t.Error("empty path: no error")
	}
	if _, err := Open(t.Context(), filepath.Join(t.TempDir(), "no", "such", "dir.db")); err == nil {
		t.Error("missing directory: no error")
	}
	// Not a database: Open must fail, not overwrite it.
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not sqlite ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), junk); err == nil {
		t.Error("open of a non-database file: no error")
	}
}

// TestMissingDirectoryIsSaidOnce: the file's directory must exist; the
// error says so once, with the command that fixes it, not "open X: open X:
// no such file or directory".
func TestMissingDirectoryIsSaidOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	path := filepath.Join(dir, "sb.db")
	_, err := Open(t.Context(), path)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Count(msg, path) != 1 || !strings.Contains(msg, "the directory "+dir+" does not exist") ||
		!strings.Contains(msg, "mkdir -p "+dir) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %q", msg)
	}
}

// crashChildEnv names the database a re-executed test binary writes to
// until it is killed.
const crashChildEnv = "SWITCHBOARD_SQLITE_CRASH_CHILD"

// TestCrashChild is the child of TestAcknowledgedWritesSurviveKill: it
// creates servers forever, printing each name once Create has returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("helper process for TestAcknowledgedWritesSurviveKill")
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("srv-%06d", i)
		cfg := &switchboard.ServerConfig{Name: name, Transport: "stdio", Command: "x", Env: map[string]string{"K": name}}
		if _, err := s.Create(context.Background(), cfg); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(name)
	}
}

func TestAcknowledgedWritesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(time.Minute)
	for len(acked) < 200 && time.Now().Before(deadline) && lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "error:") {
			t.Fatalf("child: %s", line)
		}
		if strings.HasPrefix(line, "srv-") {
			acked = append(acked, line)
		}
	}
	// SIGKILL while the child is writing: no deferred Close, no checkpoint.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acked) < 200 {
		t.Fatalf("child acknowledged only %d writes before the deadline", len(acked))
	}

	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	for _, name := range acked {
		srv, err := s.Get(t.Context(), name)
		if err != nil {
			t.Fatalf("acknowledged write %s lost after kill -9: %v", name, err)
		}
		if srv.Config.Env["K"] != name {
			t.Fatalf("%s came back as %+v", name, srv.Config)
		}
	}
	var check string
	if err := s.db.QueryRowContext(t.Context(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
}
