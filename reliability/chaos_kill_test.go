package reliability

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Kill -9 cycles. The kills must be crash recoveries, not flapping: the
// machine (upstream/machine.go) treats a drop within FlapWindow of a
// transparent reconnect as flapping and sends it through backoff, which
// with the default 10 s window would turn back-to-back kills into 2/4/8 s
// waits and finally status error, and 500 cycles would need 500 × 10 s.
// So the window is shortened to killFlapWindow and every connection lives
// at least killDwell (and serves at least one call) before it is killed:
// each kill lands well outside the window, is a transparent reconnect, and
// the scenario measures exactly that path. Flapping is its own scenario.
const (
	killFlapWindow = 50 * time.Millisecond
	killDwell      = 150 * time.Millisecond // 3 × killFlapWindow
	killCallers    = 4                      // two per core on the reference machine
)

// TestChaosKill9Cycles kills a stdio server with SIGKILL each time its
// session has reconnected, while several goroutines call echo through the
// session without pause. Every call must succeed with the right answer or
// fail with a typed error, never succeed empty; afterwards no process,
// zombie, descriptor or goroutine of the session may be left.
func TestChaosKill9Cycles(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cycles := pick(30, 500)
	budget := pick(60*time.Second, 10*time.Minute)
	bin := testserver.Binary(t)
	cfg := &sb.ServerConfig{Name: "kill9", Transport: sb.TransportStdio, Command: bin, ProtocolVersion: "2025-11-25"}

	// Warm up: the first session of the process opens descriptors that stay
	// (the runtime's netpoller), which must be in the baseline.
	warm := upstream.New(cfg, &upstream.Options{Logger: quietLogger()})
	if err := warm.Start(context.Background()); err != nil {
		t.Fatalf("warm-up session: %v", err)
	}
	if _, err := warm.CallTool(context.Background(), "echo", map[string]any{"text": "warm"}, sb.InvokeOptions{}); err != nil {
		t.Fatalf("warm-up call: %v", err)
	}
	if err := warm.Shutdown(context.Background()); err != nil {
		t.Fatalf("warm-up shutdown: %v", err)
	}
	baseFDs := fdCount()

	var attemptsFailed, drops atomic.Int64
	s := upstream.New(cfg, &upstream.Options{
		Logger:     quietLogger(),
		FlapWindow: killFlapWindow,
		OnEvent: func(e sb.Event) {
			switch e.Reason {
			case sb.ReasonAttemptFailed:
				attemptsFailed.Add(1)
			case sb.ReasonDropped:
				drops.Add(1)
			}
		},
	})
	shut := false
	defer func() {
		if !shut {
			s.Shutdown(context.Background())
		}
	}()
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}

	// The callers run until the kills are done (or the budget is spent);
	// they are never cancelled, so that a cancellation by the test cannot
	// hide among the failures being counted.
	deadline := time.Now().Add(budget)
	var (
		stop     atomic.Bool
		tally    outcomes
		wg       sync.WaitGroup
		killedAt atomic.Int64 // unix nanoseconds of the latest kill
		// Failed calls that started after the latest kill: the connection
		// was already dead (or dying) when they were made.
		lateFailures atomic.Int64
	)
	for g := range killCallers {
		wg.Go(func() {
			for i := 0; !stop.Load() && time.Now().Before(deadline); i++ {
				want := fmt.Sprintf("caller %d call %d", g, i)
				started := time.Now().UnixNano()
				res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": want}, sb.InvokeOptions{Timeout: 10 * time.Second})
				if err != nil && started > killedAt.Load() && killedAt.Load() != 0 {
					lateFailures.Add(1)
				}
				tally.record(res, err, want)
			}
		})
	}

	var reconnect []time.Duration
	var problem string
	for c := range cycles {
		if time.Now().After(deadline) {
			problem = fmt.Sprintf("only %d of %d cycles within %v", c, cycles, budget)
			break
		}
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		info, err := s.WaitFor(wctx, func(i sb.RuntimeInfo) bool {
			return i.Status == sb.StatusConnected && i.Reconnects == c && i.PID > 0
		})
		cancel()
		if err != nil {
			problem = fmt.Sprintf("cycle %d: not connected with %d reconnects: %v; info %+v", c, c, err, info)
			break
		}
		// Dwell: let the new connection serve calls (at least one) and age
		// past the flap window.
		connectedAt := time.Now()
		before := tally.okCount()
		for (time.Since(connectedAt) < killDwell || tally.okCount() == before) && time.Since(connectedAt) < 5*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		if tally.okCount() == before {
			problem = fmt.Sprintf("cycle %d: no call succeeded on the new connection within 5s", c)
			break
		}
		start := time.Now()
		killedAt.Store(start.UnixNano())
		if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
			problem = fmt.Sprintf("cycle %d: kill %d: %v", c, info.PID, err)
			break
		}
		wctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		after, err := s.WaitFor(wctx, func(i sb.RuntimeInfo) bool {
			return i.Status == sb.StatusConnected && i.Reconnects == c+1
		})
		cancel()
		if err != nil {
			problem = fmt.Sprintf("cycle %d: no reconnect within 10s of killing pid %d: %v; info %+v", c, info.PID, err, after)
			break
		}
		reconnect = append(reconnect, time.Since(start))
	}
	stop.Store(true)
	wg.Wait()
	final := s.Info()
	if problem != "" {
		t.Error(problem)
	}

	figure(t, "kill9.cycles", len(reconnect), "cycles")
	figure(t, "kill9.flap_window", killFlapWindow, "ms")
	figure(t, "kill9.reconnect_p50", quantile(reconnect, 0.5), "ms")
	figure(t, "kill9.reconnect_p99", quantile(reconnect, 0.99), "ms")
	figure(t, "kill9.reconnect_max", quantile(reconnect, 1), "ms")
	figure(t, "kill9.reconnects", final.Reconnects, "reconnects")
	figure(t, "kill9.attempts_failed", attemptsFailed.Load(), "attempts")
	tally.report(t, "kill9")
	figure(t, "kill9.calls_failed_started_after_kill", lateFailures.Load(), "calls")

	if final.Reconnects != len(reconnect) || final.Attempt != 0 {
		t.Errorf("reconnects %d, attempt %d after %d kills; want %d and 0 (every kill a transparent reconnect)",
			final.Reconnects, final.Attempt, len(reconnect), len(reconnect))
	}
	if n := attemptsFailed.Load(); n != 0 {
		t.Errorf("%d connection attempts failed; every respawn should have succeeded", n)
	}
	if n := drops.Load(); n != int64(len(reconnect)) {
		t.Errorf("%d drops reported for %d kills", n, len(reconnect))
	}
	// A call made while the session is reconnecting waits for the new
	// connection (README: CallTool "waits for a connecting session");
	// ErrConnectionLost is for calls in flight when the connection died.
	// At most killCallers calls are in flight at a kill; allow as many again
	// for calls started in the instant between the signal and the closed
	// pipe, which may have been written into the dying process's stdin.
	if late, limit := lateFailures.Load(), int64(killCallers*len(reconnect)); late > limit {
		t.Errorf("%d calls started after a kill failed (limit %d for %d kills × %d callers): calls made on a connection "+
			"already known to be dead fail with ErrConnectionLost instead of waiting for the reconnect", late, limit, len(reconnect), killCallers)
	}

	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	shut = true
	checkResources(t, "kill9", bin, baseFDs, 3*time.Second, ignore)
}
