package postgres

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	pgtest.ServerDSN(t) // one skip or failure, not one per subtest
	storetest.Run(t, func(t *testing.T) storetest.OpenFunc {
		dsn := pgtest.NewDatabase(t)
		return func() (switchboard.Store, error) { return Open(context.Background(), dsn) }
	})
}

// Replicas starting together must not race each other's migrations.
func TestConcurrentOpen(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	// Create goose's version table first. Otherwise goose's own retry of
	// its creation (once a second) happens to spread the replicas out, and
	// the race on the migrations themselves, which the lock prevents, is
	// never run.
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	versions, err := database.NewStore(goose.DialectPostgres, migrationsTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := versions.CreateVersionTable(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if err := versions.Insert(t.Context(), db, database.InsertRequest{Version: 0}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	const n = 4
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		stores = make([]*Store, n)
		errs   = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), dsn)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	var applied int
	err = stores[0].pool.QueryRow(t.Context(),
		`SELECT count(*) FROM `+migrationsTable+` WHERE version_id > 0`).Scan(&applied)
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Errorf("%d migrations recorded, want %d (each once)", applied, len(files))
	}
	if _, err := stores[1].Create(t.Context(), &switchboard.ServerConfig{Name: "x", Transport: "stdio", Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].Get(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
}

// An unreachable server fails Open without the password in the error.
func TestOpenErrorHidesPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://user:hunter2secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://user:hunter2secret@127.0.0.1:1/db?sslmode=bogus",
	} {
		s, err := Open(t.Context(), dsn)
		if err == nil {
			s.Close()
			t.Fatalf("open %s: no error", dsn)
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
