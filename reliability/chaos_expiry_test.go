package reliability

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

const expiryCallers = 8

// span is an interval of time.
type span struct{ from, to time.Time }

// overlaps reports whether s and o share an instant.
func (s span) overlaps(o span) bool { return s.from.Before(o.to) && o.from.Before(s.to) }

// TestChaosSessionExpiryUnderLoad makes a Streamable HTTP test server
// forget its sessions (/admin/drop: every request on the old session gets
// HTTP 404) several times while eight callers call echo without pause.
// Each drop must cause exactly one reconnect, however many callers see the
// 404. A request refused with 404 never ran, so the session retries it on
// the new session (README, "The library"): no call started after the drop
// may fail. A call in flight at the drop may have run, and must then fail
// with ErrConnectionLost rather than run twice; the server's event log
// tells how many of those did run.
func TestChaosSessionExpiryUnderLoad(t *testing.T) {
	drops := pick(3, 30)
	events := testserver.EventsFile(t)
	srv := testserver.StartHTTP(t, "-events", events)
	cfg := &sb.ServerConfig{Name: "expiry", Transport: sb.TransportStreamableHTTP, URL: srv.URL}
	var dropped, failedAttempts atomic.Int64
	var attemptErrs sync.Map // attempt number -> *sb.ErrorInfo, to say why one failed
	s := upstream.New(cfg, &upstream.Options{
		Logger: quietLogger(),
		// The callers are the ones who find the session gone; the probe is
		// off so that every reconnect is theirs to cause.
		HealthInterval: -1,
		// Drops a second apart would be flapping under the default 10 s
		// window (a second drop soon after a transparent reconnect goes
		// through backoff); each drop here comes at least expiryDwell
		// after the previous reconnect, outside this window, so that each
		// is the transparent reconnect being measured. See the kill -9
		// scenario for the same choice.
		FlapWindow: killFlapWindow,
		OnEvent: func(e sb.Event) {
			switch e.Reason {
			case sb.ReasonDropped:
				dropped.Add(1)
			case sb.ReasonAttemptFailed:
				attemptErrs.Store(failedAttempts.Add(1), e.Error)
			}
		},
	})
	defer s.Shutdown(context.Background())
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}

	deadline := time.Now().Add(pick(45*time.Second, 5*time.Minute))
	var (
		stop        atomic.Bool
		tally       outcomes
		wg          sync.WaitGroup
		mu          sync.Mutex
		failedCalls []span // when each failed call ran
		dropSpans   []span // when each /admin/drop was being answered
	)
	for g := range expiryCallers {
		wg.Go(func() {
			for i := 0; !stop.Load() && time.Now().Before(deadline); i++ {
				want := fmt.Sprintf("caller %d call %d", g, i)
				started := time.Now()
				res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": want}, sb.InvokeOptions{Timeout: 10 * time.Second})
				if err != nil {
					mu.Lock()
					failedCalls = append(failedCalls, span{started, time.Now()})
					mu.Unlock()
				}
				tally.record(res, err, want)
			}
		})
	}

	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var reconnect []time.Duration
	for d := range drops {
		// Let the current session serve a good number of calls first, so
		// that every drop hits a session under load.
		since, before := time.Now(), tally.okCount()
		for (tally.okCount() < before+100 || time.Since(since) < killDwell) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		at := time.Now()
		resp, err := client.Post(srv.BaseURL+"/admin/drop", "", nil)
		if err != nil {
			t.Fatalf("drop %d: %v", d, err)
		}
		resp.Body.Close()
		mu.Lock()
		dropSpans = append(dropSpans, span{at, time.Now()})
		mu.Unlock()
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		info, err := s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.Reconnects == d+1 })
		cancel()
		if err != nil {
			t.Fatalf("drop %d: no reconnect within 10s: %v; status %s, reconnects %d", d, err, info.Status, info.Reconnects)
		}
		reconnect = append(reconnect, time.Since(at))
	}
	// The last session serves calls too before the count is taken.
	before := tally.okCount()
	for tally.okCount() < before+100 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	info := s.Info()

	serverDrops, serverCalls := 0, 0
	for _, e := range testserver.ReadEvents(t, events) {
		if e.Event == "drop" && e.Reason == "admin" {
			serverDrops++
		}
		if e.Event == "call" && e.Tool == "echo" {
			serverCalls++
		}
	}

	// A failed call that overlaps no drop was not in flight when the server
	// forgot the session: it was sent afterwards, got 404 on the old
	// session or went to the new one, and provably never ran on the old.
	late := 0
	for _, c := range failedCalls {
		if !slices.ContainsFunc(dropSpans, c.overlaps) {
			late++
		}
	}
	ok, failed := tally.okCount(), tally.failures()
	ranThenFailed := serverCalls - ok // the tool ran; its answer was lost with the session
	figure(t, "expiry.drops", serverDrops, "drops")
	figure(t, "expiry.reconnects", info.Reconnects, "reconnects")
	figure(t, "expiry.dropped_events", dropped.Load(), "events")
	figure(t, "expiry.reconnect_p50", quantile(reconnect, 0.5), "ms")
	figure(t, "expiry.reconnect_max", quantile(reconnect, 1), "ms")
	tally.report(t, "expiry")
	figure(t, "expiry.server_echo_runs", serverCalls, "calls")
	figure(t, "expiry.calls_failed_after_running", ranThenFailed, "calls")
	figure(t, "expiry.calls_failed_not_in_flight_at_a_drop", late, "calls")

	if serverDrops != drops || info.Reconnects != drops || dropped.Load() != int64(drops) {
		t.Errorf("%d drops by the server, %d reconnects, %d dropped events; want %d of each", serverDrops, info.Reconnects, dropped.Load(), drops)
	}
	if n := failedAttempts.Load(); n != 0 {
		t.Errorf("%d reconnection attempts failed", n)
		attemptErrs.Range(func(k, v any) bool {
			if info, _ := v.(*sb.ErrorInfo); info != nil {
				t.Errorf("failed attempt %v: %s in phase %s: %s", k, info.Code, info.Phase, info.Message)
			}
			return true
		})
	}
	// A call in flight when the server forgets the session may have run
	// (the server's own log shows that some did), so the session must not
	// retry it: it fails with ErrConnectionLost. Only those may fail, at
	// most one per caller and drop.
	if n := failed - tally.count("connection_lost"); n != 0 {
		t.Errorf("%d calls failed with something else than ErrConnectionLost", n)
	}
	if limit := expiryCallers * drops; failed > limit {
		t.Errorf("%d calls failed; at most the %d in flight at the drops may (%d callers × %d drops)", failed, limit, expiryCallers, drops)
	}
	if late != 0 {
		t.Errorf("%d failed calls were not in flight at any drop; they never ran on the old session and must be retried", late)
	}
	// No call ran twice: every run on the server is a call that succeeded
	// or one that failed after running.
	if serverCalls < ok || serverCalls > ok+failed {
		t.Errorf("the server ran echo %d times for %d successes and %d failures: a call ran twice or a success never ran", serverCalls, ok, failed)
	}
}
