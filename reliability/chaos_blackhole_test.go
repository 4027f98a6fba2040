package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Black hole detection: the health probe runs every holeInterval and gives
// up after holeProbeTimeout, so a silent path is noticed at most
// holeInterval + holeProbeTimeout after it died (it died just after a probe
// was answered: the next one starts a full interval later and times out).
// holeSlack covers timer and scheduling latency on a loaded two-core
// machine under the race detector; it is small next to the bound, so the
// test still fails if detection took a second probe.
const (
	holeInterval     = 500 * time.Millisecond
	holeProbeTimeout = 500 * time.Millisecond
	holeSlack        = 300 * time.Millisecond
)

// TestChaosBlackHoleIsDetected puts a loopback TCP proxy between a session
// and a Streamable HTTP test server, and black-holes the path: the
// connections stay open and nothing comes back. The session must leave
// connected within the probe's bound, a call in flight must fail with a
// typed error instead of waiting for its own 30 s timeout, and once the
// path is restored the session must connect again by itself.
func TestChaosBlackHoleIsDetected(t *testing.T) {
	cycles := pick(3, 20)
	srv := testserver.StartHTTP(t)
	target, err := url.Parse(srv.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startHoleProxy(t, target.Host)
	cfg := &sb.ServerConfig{
		Name: "blackhole", Transport: sb.TransportStreamableHTTP, URL: "http://" + proxy.Addr() + "/mcp",
		// An attempt through the hole hangs until its startup timeout; keep
		// that, and the retries after it, short so that healing is quick.
		StartupTimeoutMS: 1500,
		Retry:            &sb.RetryConfig{MaxAttempts: 100, DelaysMS: []int64{100, 200, 400}, SlowRetryMS: 1000},
	}
	s := upstream.New(cfg, &upstream.Options{Logger: quietLogger(), HealthInterval: holeInterval, ProbeTimeout: holeProbeTimeout})
	defer s.Shutdown(context.Background())
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}

	bound := holeInterval + holeProbeTimeout + holeSlack
	var detect, callFail, heal []time.Duration
	var tally outcomes
	for c := range cycles {
		wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		info, err := s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: not connected: %v; status %s, error %+v", c, err, info.Status, info.Error)
		}
		want := fmt.Sprintf("cycle %d", c)
		res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": want}, sb.InvokeOptions{Timeout: 5 * time.Second})
		tally.record(res, err, want)
		if err != nil {
			t.Fatalf("cycle %d: call before the black hole: %v", c, err)
		}

		// A long call in flight when the path dies.
		type result struct {
			err error
			at  time.Time
		}
		inflight := make(chan result, 1)
		go func() {
			_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{Timeout: 30 * time.Second})
			inflight <- result{err, time.Now()}
		}()
		// The request gets on the wire, and the hole opens at a random
		// point of the probe's period, so that the cycles sample the whole
		// range up to the worst case (just after a probe was answered).
		time.Sleep(100*time.Millisecond + rand.N(holeInterval))

		holed := time.Now()
		proxy.Blackhole(true)
		wctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, err = s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status != sb.StatusConnected })
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: still connected 10s after the black hole", c)
		}
		d := time.Since(holed)
		detect = append(detect, d)
		if d > bound {
			t.Errorf("cycle %d: the black hole was noticed after %v, over HealthInterval %v + ProbeTimeout %v + %v slack",
				c, d, holeInterval, holeProbeTimeout, holeSlack)
		}
		select {
		case r := <-inflight:
			callFail = append(callFail, r.at.Sub(holed))
			if kindOf(r.err) == "" || kindOf(r.err) == "timeout" {
				t.Errorf("cycle %d: the call in flight ended with %v; want a typed connection failure, not its own timeout", c, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("cycle %d: the call in flight still hangs 10s after the black hole", c)
		}

		healed := time.Now()
		proxy.Blackhole(false)
		wctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
		info, err = s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected })
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: not connected again 15s after the path came back: %v; status %s, error %+v", c, err, info.Status, info.Error)
		}
		heal = append(heal, time.Since(healed))
	}

	figure(t, "blackhole.cycles", cycles, "cycles")
	figure(t, "blackhole.bound", bound, "ms")
	figure(t, "blackhole.detect_p50", quantile(detect, 0.5), "ms")
	figure(t, "blackhole.detect_max", quantile(detect, 1), "ms")
	figure(t, "blackhole.inflight_call_failed_p50", quantile(callFail, 0.5), "ms")
	figure(t, "blackhole.inflight_call_failed_max", quantile(callFail, 1), "ms")
	figure(t, "blackhole.reconnect_after_heal_p50", quantile(heal, 0.5), "ms")
	figure(t, "blackhole.reconnect_after_heal_max", quantile(heal, 1), "ms")
	tally.report(t, "blackhole")
}
