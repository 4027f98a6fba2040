package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serverEnv names the URL of a PostgreSQL server the tests may create
// databases on; scripts/start-postgres.sh starts one and sets it.
const serverEnv = "SWITCHBOARD_TEST_POSTGRES"

// serverDSN returns the test server's URL. Without one the test is skipped
// on a developer's machine, but fails in CI, where a skip would hide that
// the PostgreSQL store was never tested.
func serverDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(serverEnv)
	if dsn != "" {
		return dsn
	}
	const msg = serverEnv + " is not set; scripts/start-postgres.sh should have set it"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (source scripts/start-postgres.sh to run these tests)")
	return ""
}

// newDatabase creates an empty database for t on the test server, drops it
// when t ends, and returns its DSN.
func newDatabase(t *testing.T) string {
	t.Helper()
	admin := serverDSN(t)
	ctx := context.Background()
	name := fmt.Sprintf("switchboard_test_%016x", rand.Uint64())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", serverEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// FORCE: a store a failed test did not close must not keep the
		// database alive.
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if strings.Contains(admin, "://") {
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("%s: %v", serverEnv, err)
		}
		u.Path = "/" + name
		return u.String()
	}
	return admin + " dbname=" + name
}

func TestConformance(t *testing.T) {
	serverDSN(t) // one skip or failure, not one per subtest
	storetest.Run(t, func(t *testing.T) storetest.OpenFunc {
		dsn := newDatabase(t)
		return func() (switchboard.Store, error) { return Open(context.Background(), dsn) }
	})
}

// Replicas starting together must not race each other's migrations.
func TestConcurrentOpen(t *testing.T) {
	dsn := newDatabase(t)
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
	err := stores[0].pool.QueryRow(t.Context(),
		`SELECT count(*) FROM `+migrationsTable+` WHERE version_id > 0`).Scan(&applied)
	if err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Errorf("%d migrations recorded, want 1", applied)
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
