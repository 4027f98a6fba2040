// Package pgtest gives tests a fresh PostgreSQL database of their own on
// the server scripts/start-postgres.sh starts.
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the URL of a PostgreSQL server on which tests may create and
// drop databases; scripts/start-postgres.sh starts one and sets it.
const Env = "SWITCHBOARD_TEST_POSTGRES"

// ServerDSN returns the test server's URL. Without one the test is skipped
// on a developer's machine, but fails in CI (env CI non-empty), where a skip
// would hide that the PostgreSQL store was never tested.
func ServerDSN(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv(Env); dsn != "" {
		return dsn
	}
	const msg = Env + " is not set; scripts/start-postgres.sh should have set it"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (source scripts/start-postgres.sh to run the PostgreSQL tests)")
	return ""
}

// NewDatabase creates an empty database with a random name on the test
// server, drops it when t ends, and returns its DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := ServerDSN(t)
	ctx := context.Background()
	name := fmt.Sprintf("switchboard_test_%016x", rand.Uint64())
	ident := pgx.Identifier{name}.Sanitize()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// FORCE: a store a failed test left open must not keep the
		// database alive.
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if !strings.Contains(admin, "://") {
		return admin + " dbname=" + name // key=value form
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	u.Path = "/" + name
	return u.String()
}
