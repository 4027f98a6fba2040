package gateway_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
)

// Two servers that show the same resource URI (every test server shows
// test://hello): /mcp serves the first under it and says so, once, instead
// of hiding the second silently.
func TestAResourceURIShownTwiceIsSaid(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Store(t, stdio(t, "alpha"), stdio(t, "beta"))
	var logs testserver.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg := registry.New(st, &registry.Options{Logger: log})
	gw := gateway.New(reg, gateway.Options{Executor: executor.New(executor.NewMCP(reg)), Logger: log, ResyncInterval: 100 * time.Millisecond})
	t.Cleanup(func() {
		gw.Close()
		reg.Shutdown(ctx)
	})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const warning = "two servers show one resource URI"
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(logs.String(), warning); {
		time.Sleep(50 * time.Millisecond)
	}
	text := logs.String()
	if !strings.Contains(text, warning) || !strings.Contains(text, "uri=test://hello") || !strings.Contains(text, "shown_for=alpha") || !strings.Contains(text, "hidden_for=beta") {
		t.Fatalf("no warning naming the URI and both servers:\n%s", text)
	}
	time.Sleep(300 * time.Millisecond) // a few resyncs more: still said once
	if n := strings.Count(logs.String(), warning+"; only the first is served under it\" uri=test://hello "); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, logs.String())
	}
}
