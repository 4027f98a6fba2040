package reliability

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

const (
	isolationFast    = 10              // fast servers, called echo
	isolationSlowers = 20              // callers hammering the slow server
	isolationSleep   = 2 * time.Second // each slow call
)

// TestChaosSlowServerDoesNotSlowTheOthers measures the latency of echo on
// ten fast stdio servers, called concurrently through one executor, first
// alone and then while twenty callers keep a slow server busy with
// two-second calls. Nothing is shared between sessions but the executor and
// the process, so the fast servers' latency must not move beyond noise.
//
// The assertion (p99 with the slow load at most 3 × p99 without, + 20 ms)
// is a sanity bound that catches head-of-line blocking (a lock or a queue
// shared across servers would put 2 s into the fast servers' tail), not a
// benchmark: on a two-core machine under the race detector, the slow
// server's process and its 20 open calls do take some CPU.
func TestChaosSlowServerDoesNotSlowTheOthers(t *testing.T) {
	rounds := pick(2, 5) // pairs of phases: alone, then with the slow load
	// Each phase outlasts one slow call, so that slow calls complete (and
	// their answers travel) while the fast servers are being measured.
	phase := pick(isolationSleep+300*time.Millisecond, 5*time.Second)
	bin := testserver.Binary(t)
	var sessions []*upstream.Session
	for i := range isolationFast + 1 {
		name := fmt.Sprintf("fast-%02d", i)
		if i == isolationFast {
			name = "slow"
		}
		s := upstream.New(&sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: bin, ProtocolVersion: "2025-11-25"},
			&upstream.Options{Logger: quietLogger()})
		defer s.Shutdown(context.Background())
		sessions = append(sessions, s)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.Start(context.Background()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Start %s: %v", sessions[i].Name(), err)
		}
	}
	ex := executor.New(executor.NewMCP(executor.NewStatic(sessions...)))

	var tally outcomes
	// measure calls echo on every fast server for d, one caller per server
	// calling again as soon as it has an answer, and returns every latency.
	measure := func(name string, d time.Duration) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for i := range isolationFast {
			wg.Go(func() {
				var mine []time.Duration
				end := time.Now().Add(d)
				for j := 0; time.Now().Before(end); j++ {
					want := fmt.Sprintf("%s %d %d", name, i, j)
					start := time.Now()
					res, err := ex.Execute(context.Background(), fmt.Sprintf("fast-%02d/echo", i), map[string]any{"text": want},
						sb.InvokeOptions{Timeout: 10 * time.Second})
					mine = append(mine, time.Since(start))
					tally.record(res, err, want)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return lat
	}

	// The slow load: 20 callers, each calling sleep again as soon as its
	// previous call returns, until their context ends. Ending it cancels
	// the calls in flight (typed ErrCancelled, counted apart), so that a
	// phase without load starts at once rather than 2 s later.
	var (
		slowDone, slowCancelled atomic.Int64
		slowTally               outcomes
	)
	slowLoad := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range isolationSlowers {
			wg.Go(func() {
				want := fmt.Sprintf("slept %dms", isolationSleep.Milliseconds())
				for ctx.Err() == nil {
					res, err := ex.Execute(ctx, "slow/sleep", map[string]any{"ms": isolationSleep.Milliseconds()},
						sb.InvokeOptions{Timeout: 10 * time.Second})
					if ctx.Err() != nil && kindOf(err) == "cancelled" {
						slowCancelled.Add(1)
						continue
					}
					slowTally.record(res, err, want)
					if err == nil {
						slowDone.Add(1)
					}
				}
			})
		}
		time.Sleep(300 * time.Millisecond) // the 20 calls are in flight
		return func() { cancel(); wg.Wait() }
	}

	// Alternate the phases, so that drift (the heap growing, the machine
	// warming up) spreads over both instead of favouring one.
	measure("warm-up", 300*time.Millisecond) // first calls pay for lazy initialisation
	var without, loaded []time.Duration
	for r := range rounds {
		without = append(without, measure(fmt.Sprintf("alone %d", r), phase)...)
		stop := slowLoad()
		loaded = append(loaded, measure(fmt.Sprintf("loaded %d", r), phase)...)
		stop()
	}

	p50a, p99a := quantile(without, 0.5), quantile(without, 0.99)
	p50b, p99b := quantile(loaded, 0.5), quantile(loaded, 0.99)
	figure(t, "isolation.rounds", rounds, "rounds")
	figure(t, "isolation.phase", phase, "ms")
	figure(t, "isolation.fast_calls_alone", len(without), "calls")
	figure(t, "isolation.fast_calls_with_slow", len(loaded), "calls")
	figure(t, "isolation.fast_p50_alone", p50a, "ms")
	figure(t, "isolation.fast_p99_alone", p99a, "ms")
	figure(t, "isolation.fast_p50_with_slow", p50b, "ms")
	figure(t, "isolation.fast_p99_with_slow", p99b, "ms")
	figure(t, "isolation.slow_calls_completed", slowDone.Load(), "calls")
	figure(t, "isolation.slow_calls_cancelled_at_phase_end", slowCancelled.Load(), "calls")
	tally.report(t, "isolation.fast")
	slowTally.report(t, "isolation.slow")
	if n := tally.failures(); n > 0 {
		t.Errorf("%d fast calls failed", n)
	}
	if n := slowTally.failures(); n > 0 {
		t.Errorf("%d slow calls failed", n)
	}
	if limit := 3*p99a + 20*time.Millisecond; p99b > limit {
		t.Errorf("fast servers' p99 %v with the slow server busy, %v without: over the sanity bound %v", p99b, p99a, limit)
	}
	if slowDone.Load()+slowCancelled.Load() < int64(rounds*isolationSlowers) {
		t.Errorf("only %d slow calls ran; the slow load did not run", slowDone.Load()+slowCancelled.Load())
	}
}
