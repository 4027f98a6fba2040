package upstream_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A server that never answers logging/setLevel (a request whose failure
// costs nothing: the session only logs less) still connects, one probe
// timeout after the handshake, not the 120 s startup timeout later. A
// per-client session so held kept its client's first call waiting until
// the call's 60 s timeout, and reported "connected" only once the client
// had gone (gateway TestDisconnectedClientsUpstreamProcessIsStopped).
func TestUnansweredSetLevelDoesNotHoldTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		swallowed := make(chan string, 4)
		d.swallow, d.swallowed = "logging/setLevel", swallowed
		cfg := memConfig()
		s, rec := newSession(t, cfg, &upstream.Options{Dial: d.dial, HealthInterval: -1})
		start := time.Now()
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != upstream.DefaultProbeTimeout {
			t.Errorf("connected after %v; want the probe timeout, %v (startup timeout %v)", took, upstream.DefaultProbeTimeout, cfg.StartupTimeout())
		}
		if len(swallowed) != 1 {
			t.Fatalf("%d setLevel requests swallowed; want 1 (does the test server advertise logging?)", len(swallowed))
		}
		if n := len(s.Info().Tools); n == 0 || rec.count(sb.ReasonConnected) != 1 {
			t.Errorf("%d tools, %d connected events", n, rec.count(sb.ReasonConnected))
		}
	})
}

// A session shut down while its dial waits for an answer it would do
// without (logging/setLevel here) stops without reporting "connected":
// the dial's requests all fail once its context ends, and a dial that
// then has a link has one that nothing may use.
func TestShutdownDuringDialReportsNoConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		swallowed := make(chan string, 4)
		d.swallow, d.swallowed = "logging/setLevel", swallowed
		s, rec := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		started := make(chan error, 1)
		go func() { started <- s.Start(context.Background()) }()
		<-swallowed // the dial waits for the answer now
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-started
		if n := rec.count(sb.ReasonConnected); n != 0 {
			t.Errorf("%d connected events for a session shut down while dialing: %v", n, rec.all())
		}
		if got := s.Status(); got != sb.StatusDisabled {
			t.Errorf("status %s after Shutdown; want disabled", got)
		}
	})
}
