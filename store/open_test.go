package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/store/postgres"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	tests := []struct {
		dsn    string
		kind   backend
		target string
	}{
		{"sqlite:./switchboard.db", backendSQLite, "./switchboard.db"},
		{"sqlite:/abs/path.db", backendSQLite, "/abs/path.db"},
		{"sqlite:///abs/path.db", backendSQLite, "/abs/path.db"},
		{"sqlite:relative/file.sqlite", backendSQLite, "relative/file.sqlite"},
		{"SQLite:x.db", backendSQLite, "x.db"},
		{"  sqlite:x.db\n", backendSQLite, "x.db"},
		{"switchboard.db", backendSQLite, "switchboard.db"},
		{"./data/switchboard.db", backendSQLite, "./data/switchboard.db"},
		{"/var/lib/switchboard/store.DB", backendSQLite, "/var/lib/switchboard/store.DB"},
		{"postgres://u:p@localhost:5432/sb?sslmode=disable", backendPostgres, "postgres://u:p@localhost:5432/sb?sslmode=disable"},
		{"postgresql://localhost/sb", backendPostgres, "postgresql://localhost/sb"},
		{"postgres://db.example.com/x.db", backendPostgres, "postgres://db.example.com/x.db"},
	}
	for _, tt := range tests {
		kind, target, err := parse(tt.dsn)
		if err != nil || kind != tt.kind || target != tt.target {
			t.Errorf("parse(%q) = %v, %q, %v; want %v, %q", tt.dsn, kind, target, err, tt.kind, tt.target)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, dsn := range []string{
		"",
		"   ",
		"sqlite:",
		"sqlite://",
		"sqlite://relative.db", // would silently mean /relative.db
		"switchboard.sqlite",   // no scheme and not .db
		"mysql://u:hunter2@host/db",
		"host=localhost dbname=sb password=hunter2",
		"file:x.db?mode=ro",
		"http://example.com/x.db",
	} {
		_, _, err := parse(dsn)
		if err == nil {
			t.Errorf("parse(%q): no error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parse(%q): error shows the password: %v", dsn, err)
		}
		if dsn != "sqlite://relative.db" && !strings.Contains(err.Error(), "sqlite:") {
			t.Errorf("parse(%q): error does not name the accepted forms: %v", dsn, err)
		}
	}
	_, _, err := parse("mysql://x")
	for _, form := range []string{"sqlite:PATH", ".db", "postgres://", "postgresql://"} {
		if !strings.Contains(err.Error(), form) {
			t.Errorf("error %q does not mention %s", err, form)
		}
	}
}

func TestOpenSQLite(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{"sqlite:" + filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")} {
		s, err := Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if _, ok := s.(*sqlite.Store); !ok {
			t.Errorf("Open(%q) returned a %T", dsn, s)
		}
		if _, err := s.Create(t.Context(), &switchboard.ServerConfig{Name: "x", Transport: "stdio", Command: "x"}); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"a.db", "b.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

func TestOpenPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*postgres.Store); !ok {
		t.Errorf("Open returned a %T", s)
	}
	if _, err := s.Create(t.Context(), &switchboard.ServerConfig{Name: "x", Transport: "stdio", Command: "x"}); err != nil {
		t.Error(err)
	}
}

func TestOpenErrorsAreNotTypedNil(t *testing.T) {
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "missing", "dir.db"))
	if err == nil || s != nil {
		t.Errorf("Open on a missing directory = %v, %v; want a nil Store and an error", s, err)
	}
	var pathErr *os.PathError
	if !errors.As(err, &pathErr) {
		t.Errorf("error %v does not wrap the *os.PathError", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://user:hunter2@db:5432/sb?sslmode=require", "postgres://user:xxxxx@db:5432/sb?sslmode=require"},
		{"postgresql://user:p%40ss%2Fword@db/sb", "postgresql://user:xxxxx@db/sb"},
		{"postgres://user@db/sb", "postgres://user@db/sb"},
		{"postgres://db/sb?password=hunter2&sslmode=disable", "postgres://db/sb?password=xxxxx&sslmode=disable"},
		{"postgres://db/sb?sslpassword=hunter2", "postgres://db/sb?sslpassword=xxxxx"},
		{"postgres://user:hun ter2@db/%zz", "postgres://user:xxxxx@db/%zz"}, // does not parse
		{"host=db user=u password=hunter2 dbname=sb", "host=db user=u password=xxxxx dbname=sb"},
		{"host=db password='hun ter\\'2' dbname=sb", "host=db password=xxxxx dbname=sb"},
		{"host=db PASSWORD = hunter2", "host=db PASSWORD = xxxxx"},
		{"sqlite:./switchboard.db", "sqlite:./switchboard.db"},
		{"/var/lib/switchboard.db", "/var/lib/switchboard.db"},
		{"", ""},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		if got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter") {
			t.Errorf("Redact(%q) leaks the password: %q", tt.in, got)
		}
	}
}
