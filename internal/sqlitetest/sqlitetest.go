// Package sqlitetest gives tests a SQLite store of their own.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// Store opens a fresh SQLite store in tb's TempDir holding cfgs, and
// closes it when the test ends (after the cleanups registered later, such
// as a registry's shutdown).
func Store(tb testing.TB, cfgs ...*sb.ServerConfig) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "sb.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	for _, cfg := range cfgs {
		if _, err := st.Create(context.Background(), cfg); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}
