package upstream_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestOwnCloseMidCallIsNamed: a call in flight when the session is
// restarted or shut down fails as a lost connection whose message says that
// Switchboard closed the link, and why, on every transport: not that the
// server closed the connection (the go-sdk sees our own close as the end
// of the stream, and a stdio server exits when its stdin closes), nor, over
// Streamable HTTP, that the server answered with JSON-RPC error -32005 (the
// go-sdk's "rejected by transport" for the POST that the close cut short).
// In process, the close ends the stream (the go-sdk's Close waits for the
// calls in flight), rather than leave the call to its own timeout.
func TestOwnCloseMidCallIsNamed(t *testing.T) {
	for _, tc := range []struct {
		how   string
		close func(*upstream.Session) error
		want  string
	}{
		{"restart", func(s *upstream.Session) error { s.Restart(); return nil }, "closed by Switchboard: the session was restarted"},
		{"shutdown", func(s *upstream.Session) error { return s.Shutdown(context.Background()) }, "closed by Switchboard: the session was shut down"},
	} {
		for _, transport := range []sb.Transport{sb.TransportStdio, sb.TransportStreamableHTTP, sb.TransportSSE, sb.TransportInProcess} {
			t.Run(tc.how+"/"+string(transport), func(t *testing.T) {
				s, events := startWithEvents(t, transport)
				errc := sleepCall(s, time.Minute)
				testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "call" && e.Tool == "sleep" }, 10*time.Second)
				if err := tc.close(s); err != nil {
					t.Fatal(err)
				}
				err := <-errc
				var ce *upstream.CallError
				if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrConnectionLost) || ce.Phase != sb.PhaseRuntime ||
					!strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrConnectionLost in phase runtime saying %q", err, tc.want)
				}
			})
		}
	}
}

// TestProbeDropMidCallNamesTheProbe: a call in flight on a connection that
// the health probe finds dead fails naming what the session dropped the
// connection for, the probe's timeout, not the end of the stream that
// closing it brought about.
func TestProbeDropMidCallNamesTheProbe(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{EventsFile: events})
		s, _ := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: time.Second, ProbeTimeout: time.Second})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		errc := sleepCall(s, time.Hour)
		synctest.Wait()
		if !hasEvent(t, events, "call", "sleep") {
			t.Fatal("the call did not reach the tool")
		}
		d.conn(1).blackHole()
		err := <-errc
		const want = "closed by Switchboard: health probe got no answer within 1s"
		var ce *upstream.CallError
		if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrConnectionLost) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want ErrConnectionLost saying %q", err, want)
		}
	})
}

// startWithEvents starts a session over transport to a testserver that
// records its events in the file it returns, with no health probe.
func startWithEvents(t *testing.T, transport sb.Transport) (*upstream.Session, string) {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events")
	opts := &upstream.Options{HealthInterval: -1}
	var cfg *sb.ServerConfig
	switch transport {
	case sb.TransportStdio:
		cfg = stdioConfig(t, "-events", events)
	case sb.TransportInProcess:
		opts.Dial = newMemDialer(t, testserver.Options{EventsFile: events}).dial
		cfg = memConfig()
	case sb.TransportStreamableHTTP, sb.TransportSSE:
		srv := testserver.StartHTTP(t, "-events", events)
		cfg = &sb.ServerConfig{Name: "test", Transport: transport, URL: srv.URL}
		if transport == sb.TransportSSE {
			cfg.URL = srv.BaseURL + "/sse"
		}
	}
	s, _ := newSession(t, cfg, opts)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, events
}
