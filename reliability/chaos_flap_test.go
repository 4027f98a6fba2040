package reliability

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// flapRetry is a small retry policy, so that a window of seconds covers the
// fast retries and several slow ones.
var flapRetry = sb.RetryConfig{MaxAttempts: 4, DelaysMS: []int64{200, 400, 800}, SlowRetryMS: 2000}

// jitterMin is the shortest a nominal retry delay may become: the machine
// spreads every wait over ±20 % (upstream/machine.go, jitterFraction).
const jitterMin = 0.8

// policyMaxStarts is the most connection attempts the retry policy of cfg
// allows within window: every wait at its shortest and every attempt taking
// no time at all. perWait is how many attempts each wait lets through: 1
// for a server that fails before connecting, 2 for one that connects and
// dies at once (README: a connected session that drops reconnects at once;
// only a drop within FlapWindow of such a reconnect is flapping and goes
// through backoff). doubling says whether the slow retry doubles after each
// attempt ("from 60 s doubling to 10 min") or stays at its first value.
func policyMaxStarts(cfg *sb.ServerConfig, window time.Duration, perWait int, doubling bool) int {
	delays, maxAttempts, slow := cfg.RetryDelays(), cfg.MaxAttempts(), cfg.SlowRetry()
	slowMax := max(sb.MaxSlowRetry, slow)
	var elapsed time.Duration
	waits := 0
	for failed := 1; ; failed++ {
		var d time.Duration
		if failed < maxAttempts {
			d = delays[min(failed, len(delays))-1]
		} else {
			d = slow
			if doubling {
				for range failed - maxAttempts {
					d = min(2*d, slowMax)
				}
			}
		}
		elapsed += time.Duration(float64(d) * jitterMin)
		if elapsed > window {
			return perWait * (1 + waits)
		}
		waits++
	}
}

// TestChaosFlappingServerIsBackedOff runs two servers that can never stay
// up, each for a window of real time, and counts the session's connection
// attempts: they must stay within what the retry policy allows, so that a
// broken server is not hammered, and the session must keep trying (fast
// retries, then slow ones), so that a repaired server heals by itself.
//
//   - "dies before initialize": -exit-at-startup 1; every attempt fails.
//   - "crashes on its first call": -crash-after 0 with two callers calling
//     echo; every attempt connects, and the first call kills the process.
func TestChaosFlappingServerIsBackedOff(t *testing.T) {
	// Parallel with the other tests that only count (crash safety): load
	// does not add attempts, and the windows are the longest wait of the
	// suite. The tests that measure time or descriptors run before any
	// parallel test starts.
	t.Parallel()
	window := pick(20*time.Second, 120*time.Second)
	bin := testserver.Binary(t)
	for _, tc := range []struct {
		name    string
		slug    string
		args    []string
		callers int
		perWait int
	}{
		{"dies before initialize", "flap_startup", []string{"-exit-at-startup", "1"}, 0, 1},
		{"crashes on its first call", "flap_first_call", []string{"-crash-after", "0"}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Counting attempts over real time is not disturbed by a
			// neighbour, and the two windows overlapping halves the cost.
			t.Parallel()
			retry := flapRetry
			cfg := &sb.ServerConfig{Name: strings.ReplaceAll(tc.slug, "_", "-"), Transport: sb.TransportStdio, Command: bin,
				Args: tc.args, ProtocolVersion: "2025-11-25", Retry: &retry}

			var (
				mu     sync.Mutex
				starts []time.Time
				slowAt []time.Time // starts made from status error: the slow retries
			)
			s := upstream.New(cfg, &upstream.Options{
				Logger: quietLogger(),
				OnEvent: func(e sb.Event) {
					if e.Reason != sb.ReasonStarting {
						return
					}
					mu.Lock()
					starts = append(starts, e.At)
					if e.Status == sb.StatusError {
						slowAt = append(slowAt, e.At)
					}
					mu.Unlock()
				},
			})
			defer s.Shutdown(context.Background())

			begin := time.Now()
			end := begin.Add(window)
			go s.Start(context.Background()) // returns at status error; the session goes on
			var (
				wg    sync.WaitGroup
				tally outcomes
				calls atomic.Int64
			)
			for g := range tc.callers {
				wg.Go(func() {
					for i := 0; time.Now().Before(end); i++ {
						want := fmt.Sprintf("caller %d call %d", g, i)
						ctx, cancel := context.WithDeadline(context.Background(), end)
						res, err := s.CallTool(ctx, "echo", map[string]any{"text": want}, sb.InvokeOptions{Timeout: 5 * time.Second})
						closed := ctx.Err() != nil
						cancel()
						if closed {
							break // the window closed under the call
						}
						calls.Add(1)
						tally.record(res, err, want)
						if err != nil {
							// A session in error fails calls at once; do not
							// spin on it.
							time.Sleep(20 * time.Millisecond)
						}
					}
				})
			}
			time.Sleep(time.Until(end))
			wg.Wait()
			mu.Lock()
			n := 0
			for _, at := range starts {
				if !at.After(end) {
					n++
				}
			}
			var gaps []string
			for i := 1; i < len(slowAt); i++ {
				gaps = append(gaps, fmt.Sprintf("%.1f", slowAt[i].Sub(slowAt[i-1]).Seconds()))
			}
			mu.Unlock()

			perMin := float64(n) * float64(time.Minute) / float64(window)
			bound := policyMaxStarts(cfg, window, tc.perWait, true)
			flatBound := policyMaxStarts(cfg, window, tc.perWait, false)
			figure(t, tc.slug+".window", window.Seconds(), "s")
			figure(t, tc.slug+".attempts", n, "attempts")
			figure(t, tc.slug+".attempts_per_min", perMin, "attempts/min")
			figure(t, tc.slug+".bound_doubling", bound, "attempts")
			figure(t, tc.slug+".bound_flat_slow_retry", flatBound, "attempts")
			figure(t, tc.slug+".slow_retry_gaps", strings.Join(gaps, ","), "s")
			if tc.callers > 0 {
				figure(t, tc.slug+".calls", calls.Load(), "calls")
				tally.report(t, tc.slug)
			}

			// The session kept trying: every fast retry and at least one
			// slow retry happened.
			if least := cfg.MaxAttempts() + 1; n < least {
				t.Errorf("%d attempts in %v; the policy makes at least %d (the fast retries, then slow ones)", n, window, least)
			}
			// Bounded. A server that never connects must follow the
			// documented policy exactly. For one that connects and then
			// dies, the slow retry does not double: every successful connect
			// resets it (machine.connected), so only the flat bound holds;
			// see RELIABILITY.md.
			limit := bound
			if tc.perWait > 1 {
				limit = flatBound
			}
			if n > limit {
				t.Errorf("%d attempts in %v (%.0f/min), over the %d the retry policy allows", n, window, perMin, limit)
			}
		})
	}
}
