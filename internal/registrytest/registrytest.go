// Package registrytest gives tests a loaded registry over a SQLite store of
// their own (New), and replicas: registries of several serve processes
// sharing one PostgreSQL database (StartReplica, StartOAuthReplica).
package registrytest

import (
	"context"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// New returns a registry with options o over a fresh SQLite store holding
// cfgs, loaded. When the test ends (after the cleanups registered later,
// such as an HTTP server's) it is shut down, a failure to shut down fails
// the test, and the store is closed.
func New(tb testing.TB, o *registry.Options, cfgs ...*sb.ServerConfig) *registry.Registry {
	tb.Helper()
	reg := registry.New(sqlitetest.Store(tb, cfgs...), o)
	tb.Cleanup(func() {
		if err := reg.Shutdown(context.Background()); err != nil {
			tb.Errorf("registry shutdown: %v", err)
		}
	})
	if err := reg.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return reg
}
