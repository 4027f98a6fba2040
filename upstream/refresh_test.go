package upstream_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A session shut down while it re-lists after list_changed (as every
// "switchboard check" does) logs no failure: nothing failed, it stopped.
func TestShutdownDuringARefreshLogsNoFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		var logs testserver.Buffer
		s := upstream.New(memConfig(), &upstream.Options{Dial: d.dial, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		// add_tool makes the server announce list_changed 10 ms later; the
		// connection goes silent first, so the re-listing waits.
		if _, err := s.CallTool(context.Background(), "add_tool", map[string]any{"name": "late"}, sb.InvokeOptions{}); err != nil {
			t.Fatal(err)
		}
		d.conn(1).blackHole()
		time.Sleep(time.Second) // fake time: the notification comes, the re-listing waits
		synctest.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("a shutdown during a refresh logged a warning:\n%s", logs.String())
		}
	})
}
