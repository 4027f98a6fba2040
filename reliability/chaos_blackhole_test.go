package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Black hole detection: the health probe runs every holeInterval and gives
// up after holeProbeTimeout. The session's probes run one after the other,
// so the first probe that goes into the hole must end the session's
// connected state before a second one is sent: the test counts the probes
// the hole swallows, rather than timing the detection, which a loaded
// machine stretches without anything being wrong.
const (
	holeInterval     = 500 * time.Millisecond
	holeProbeTimeout = 500 * time.Millisecond
)

// dropRecorder keeps the session's last drop event.
type dropRecorder struct {
	mu   sync.Mutex
	last sb.Event
}

func (r *dropRecorder) observe(ev sb.Event) {
	if ev.Reason == sb.ReasonDropped {
		r.mu.Lock()
		r.last = ev
		r.mu.Unlock()
	}
}

func (r *dropRecorder) lastDrop() sb.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// TestChaosBlackHoleIsDetected puts a loopback TCP proxy between a session
// and a Streamable HTTP test server, and black-holes the path: the
// connections stay open and nothing comes back. The first health probe
// into the hole must drop the session (before a second probe is sent), a
// call in flight must fail with a typed error instead of waiting for its
// own 30 s timeout, and once the path is restored the session must connect
// again by itself, with the first attempt that does not hang on a
// connection left in the hole.
//
// Every wait is bounded by the session's own timeouts and probes, never by
// the test's clock: a detection that took a second probe fails at the
// second probe; one that never came fails when the call in flight runs
// into its own timeout; a session that does not heal fails when its
// attempts outnumber the connections the hole holds.
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
	var drops dropRecorder
	s := upstream.New(cfg, &upstream.Options{Logger: quietLogger(), HealthInterval: holeInterval, ProbeTimeout: holeProbeTimeout, OnEvent: drops.observe})
	defer s.Shutdown(context.Background())
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}

	var detect, callFail, heal []time.Duration
	probes := 0 // the most probes one hole took
	var tally outcomes
	for c := range cycles {
		if info := s.Info(); info.Status != sb.StatusConnected {
			t.Fatalf("cycle %d: not connected: status %s, error %+v", c, info.Status, info.Error)
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
		callDone := make(chan struct{})
		go func() {
			defer close(callDone)
			_, err := s.CallTool(context.Background(), "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{Timeout: 30 * time.Second})
			inflight <- result{err, time.Now()}
		}()
		// The request gets on the wire, and the hole opens at a random
		// point of the probe's period, so that the cycles sample the whole
		// range up to the worst case (just after a probe was answered).
		time.Sleep(100*time.Millisecond + rand.N(holeInterval))

		holed := time.Now()
		proxy.Blackhole(true)
		second := proxy.SwallowedProbes(2)
		wctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-second:
			case <-callDone:
			case <-wctx.Done():
			}
			cancel()
		}()
		s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status != sb.StatusConnected })
		cancel()
		// Nothing gets through the hole: a session that has left connected
		// stays out of it until the path is restored.
		if info := s.Info(); info.Status == sb.StatusConnected {
			select {
			case <-second:
				t.Fatalf("cycle %d: a second health probe went into the black hole and the session is still connected", c)
			default:
				t.Fatalf("cycle %d: the call in flight ended (%v) and the session is still connected", c, (<-inflight).err)
			}
		}
		detect = append(detect, time.Since(holed))
		n := proxy.Swallowed()
		probes = max(probes, n)
		if n > 1 {
			t.Errorf("cycle %d: %d health probes went into the black hole before the session left connected, want at most 1", c, n)
		}
		if drop := drops.lastDrop(); drop.Error == nil || drop.Error.Code != sb.CodeProbeTimeout {
			t.Errorf("cycle %d: the session dropped with %+v, want the health probe's timeout (%s)", c, drop.Error, sb.CodeProbeTimeout)
		}
		r := <-inflight // within the call's own timeout
		callFail = append(callFail, r.at.Sub(holed))
		if kindOf(r.err) == "" || kindOf(r.err) == "timeout" {
			t.Errorf("cycle %d: the call in flight ended with %v; want a typed connection failure, not its own timeout", c, r.err)
		}

		// The path is back for new connections only. An attempt can still
		// hang on one the hole holds: the attempt in progress, or one that
		// takes up a kept-alive connection frozen in the hole; it fails at
		// its startup timeout, and its client closes that connection. So at
		// most as many attempts fail as the hole holds connections, and the
		// next one must connect. (Counted in this order, an attempt that
		// fails meanwhile counts its connection, not its failure.)
		healed := time.Now()
		proxy.Blackhole(false)
		frozen := proxy.Frozen()
		failed := s.Info().Attempt
		info, _ := s.WaitFor(context.Background(), func(i sb.RuntimeInfo) bool {
			return i.Status == sb.StatusConnected || i.Attempt > failed+frozen
		})
		if info.Status != sb.StatusConnected {
			t.Fatalf("cycle %d: %d attempts failed after the path came back, with %d connections in the hole: %+v",
				c, info.Attempt-failed, frozen, info.Error)
		}
		heal = append(heal, time.Since(healed))
	}

	figure(t, "blackhole.cycles", cycles, "cycles")
	figure(t, "blackhole.probes_into_hole_max", probes, "probes")
	figure(t, "blackhole.detect_p50", quantile(detect, 0.5), "ms")
	figure(t, "blackhole.detect_max", quantile(detect, 1), "ms")
	figure(t, "blackhole.inflight_call_failed_p50", quantile(callFail, 0.5), "ms")
	figure(t, "blackhole.inflight_call_failed_max", quantile(callFail, 1), "ms")
	figure(t, "blackhole.reconnect_after_heal_p50", quantile(heal, 0.5), "ms")
	figure(t, "blackhole.reconnect_after_heal_max", quantile(heal, 1), "ms")
	tally.report(t, "blackhole")
}
