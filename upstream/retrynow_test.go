package upstream_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// RetryNow wakes a session that waits for its next attempt, and leaves a
// connected one alone: a call in flight on it completes, where Restart
// would cut it ("closed by Switchboard: the session was restarted"). A
// registry asks for it when another replica authorizes a server's OAuth
// grant, and the session may have connected on its own meanwhile.
func TestRetryNowWakesAWaitingSessionOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		refuse := true
		d.before = func(ctx context.Context, n int) error {
			if refuse {
				return errors.New("refused")
			}
			return nil
		}
		s, rec := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		ctx := context.Background()
		go s.Start(ctx)
		synctest.Wait() // the first attempt failed: the session waits 2 s for the next
		if i := s.Info(); i.Status == sb.StatusConnected || i.NextRetryAt == nil {
			t.Fatalf("after a refused attempt: %+v", i)
		}
		refuse = false
		s.RetryNow()
		synctest.Wait()
		if i := s.Info(); i.Status != sb.StatusConnected {
			t.Fatalf("after RetryNow: %+v; want connected at once, not after the backoff", i)
		}

		done := make(chan error, 1)
		go func() {
			_, err := s.CallTool(ctx, "sleep", map[string]any{"ms": 1000}, sb.InvokeOptions{Timeout: time.Minute})
			done <- err
		}()
		synctest.Wait() // the call is in flight
		s.RetryNow()
		if err := <-done; err != nil {
			t.Fatalf("a call in flight when RetryNow came: %v; want it to complete", err)
		}
		if i := s.Info(); i.Status != sb.StatusConnected || i.Reconnects != 0 || rec.count(sb.ReasonRestarted) != 1 {
			t.Fatalf("after RetryNow on a connected session: %+v, %d restarts; want it untouched (one restart: the wake)", i, rec.count(sb.ReasonRestarted))
		}
	})
}
