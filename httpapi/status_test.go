package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// GET /api/v1/status names the replica that answered and when it last
// matched the database.
func TestStatusNamesTheReplica(t *testing.T) {
	ctx := context.Background()
	before := time.Now()
	reg := registrytest.New(t, &registry.Options{Logger: slog.New(slog.DiscardHandler), ReplicaID: "replica-7"})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: executor.New(executor.NewMCP(reg)), Token: "t0ken"}))
	defer srv.Close()
	c, err := client.New(srv.URL, "t0ken", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Replica.ID != "replica-7" || got.Replica.ChangeFeed || got.Replica.LastSync == nil || got.Replica.LastSync.Before(before.Add(-time.Second)) {
		t.Fatalf("status %+v, want replica-7, no change feed (SQLite), synced at load", got.Replica)
	}
}
