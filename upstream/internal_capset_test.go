package upstream

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// A capability set's session no call has used for capIdleTimeout is shut
// down, and one leased by a call is not, however long the call; the next
// call of the set makes a new one. (The sessions dial a port nobody
// listens on: what is tested is the lease, not the connection.)
func TestCapabilitySetSessionsCloseWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(&sb.ServerConfig{Name: "idle", Transport: sb.TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp"},
			&Options{Logger: slog.New(slog.DiscardHandler), HealthInterval: -1})
		defer s.Shutdown(context.Background())

		sampling, done, ok := s.capSessions.lease(s, capSample, "2025-11-25")
		if !ok {
			t.Fatal("no session for the sampling set")
		}
		_, doneNone, _ := s.capSessions.lease(s, 0, "2025-11-25")
		doneNone() // unused from now on
		time.Sleep(capIdleTimeout - time.Second)
		synctest.Wait()
		if n := s.capSessions.count(); n != 2 {
			t.Fatalf("%d sessions a second before the idle timeout, want 2", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := s.capSessions.count(); n != 1 {
			t.Fatalf("%d sessions after the idle timeout, want 1 (the leased one)", n)
		}
		time.Sleep(time.Hour) // a long call
		synctest.Wait()
		select {
		case <-sampling.Done():
			t.Fatal("the session of a call in progress was shut down")
		default:
		}
		done()
		time.Sleep(capIdleTimeout + time.Second)
		synctest.Wait()
		select {
		case <-sampling.Done():
		default:
			t.Fatal("the sampling session is still running capIdleTimeout after its call ended")
		}
		again, doneAgain, _ := s.capSessions.lease(s, capSample, "2025-11-25")
		defer doneAgain()
		if again == sampling {
			t.Error("the next call of the set took the session that was shut down")
		}
	})
}
