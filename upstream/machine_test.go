package upstream

import (
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

func testMachine() *machine {
	return &machine{
		status: sb.StatusConnecting,
		p: policy{
			maxAttempts: 4,
			delays:      []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second},
			slowFirst:   time.Minute,
			slowMax:     10 * time.Minute,
			flapWindow:  10 * time.Second,
			stableAfter: 2 * time.Minute,
			jitter:      func(d time.Duration) time.Duration { return d },
		},
	}
}

var (
	t0        = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	transient = &failure{phase: sb.PhaseSpawn, code: "process_exited", msg: "exited", retry: retryFast}
	dropCause = &failure{phase: sb.PhaseRuntime, code: "process_exited", msg: "exited", retry: retryFast}
)

func TestMachineBacksOffThenErrorsThenRetriesSlowly(t *testing.T) {
	m := testMachine()
	var waits []time.Duration
	for range 7 {
		m.attemptStarted()
		w, retry := m.attemptFailed(t0, transient)
		if !retry {
			t.Fatal("a transient failure must be retried")
		}
		waits = append(waits, w)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second,
		time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits = %v, want %v", waits, want)
		}
	}
	if m.status != sb.StatusError || m.attempt != 7 {
		t.Fatalf("status %s attempt %d, want error 7", m.status, m.attempt)
	}
	m.attemptStarted()
	if w, _ := m.attemptFailed(t0, transient); w != 10*time.Minute {
		t.Fatalf("slow retry not capped: %v", w)
	}
	if m.status != sb.StatusError {
		t.Fatalf("status during slow retry = %s, want error", m.status)
	}
	if m.nextRetryAt != t0.Add(10*time.Minute) {
		t.Fatalf("next_retry_at = %v", m.nextRetryAt)
	}
}

func TestMachineNonRetriableSkipsFastRetries(t *testing.T) {
	for _, tc := range []struct {
		class     retryClass
		wantRetry bool
		wantWait  time.Duration
	}{
		{retrySlow, true, time.Minute},
		{retryNever, false, 0},
	} {
		m := testMachine()
		m.attemptStarted()
		w, retry := m.attemptFailed(t0, &failure{phase: sb.PhaseAuth, retry: tc.class})
		if retry != tc.wantRetry || w != tc.wantWait || m.status != sb.StatusError {
			t.Errorf("class %d: wait %v retry %v status %s; want %v %v error", tc.class, w, retry, m.status, tc.wantWait, tc.wantRetry)
		}
	}
}

func TestMachineDropReconnectsTransparentlyThenDetectsFlapping(t *testing.T) {
	m := testMachine()
	m.attemptStarted()
	m.connected(t0)

	// First drop after a minute: transparent, immediate, budget untouched.
	w, retry := m.dropped(t0.Add(time.Minute), dropCause)
	if w != 0 || !retry || m.reconnects != 1 || m.attempt != 0 || m.status != sb.StatusConnecting {
		t.Fatalf("first drop: wait %v retry %v reconnects %d attempt %d status %s", w, retry, m.reconnects, m.attempt, m.status)
	}
	// Reconnected, and dropped again 2 s later: flapping, counted, backoff.
	m.attemptStarted()
	m.connected(t0.Add(61 * time.Second))
	w, _ = m.dropped(t0.Add(63*time.Second), dropCause)
	if w != 2*time.Second || m.attempt != 1 || m.reconnects != 1 {
		t.Fatalf("flap: wait %v attempt %d reconnects %d; want 2s 1 1", w, m.attempt, m.reconnects)
	}
	// The backoff connection drops once more: transparent again.
	m.attemptStarted()
	m.connected(t0.Add(70 * time.Second))
	if w, _ = m.dropped(t0.Add(71*time.Second), dropCause); w != 0 || m.reconnects != 2 {
		t.Fatalf("drop after backoff: wait %v reconnects %d", w, m.reconnects)
	}
}

func TestMachineStableConnectionResetsBudget(t *testing.T) {
	m := testMachine()
	for range 3 {
		m.attemptStarted()
		m.attemptFailed(t0, transient)
	}
	m.attemptStarted()
	m.connected(t0)
	if m.attempt != 3 {
		t.Fatalf("attempt reset on connect already: %d", m.attempt)
	}
	m.dropped(t0.Add(3*time.Minute), dropCause)
	if m.attempt != 0 {
		t.Fatalf("attempt after a stable connection = %d, want 0", m.attempt)
	}
}

func TestMachineConnectedClearsErrorButNotTheBackoff(t *testing.T) {
	m := testMachine()
	for range 5 {
		m.attemptStarted()
		m.attemptFailed(t0, transient)
	}
	m.attemptStarted()
	m.connected(t0)
	if m.err != nil || !m.nextRetryAt.IsZero() || m.status != sb.StatusConnected {
		t.Fatalf("connected left state behind: %+v", m)
	}
	// A server that connects and crashes at once keeps backing off: the
	// slow retry goes on doubling (LangBot-style flat retries would spawn it
	// twice a minute forever).
	m.dropped(t0.Add(time.Second), dropCause) // transparent
	m.attemptStarted()
	m.connected(t0.Add(2 * time.Second))
	w, _ := m.dropped(t0.Add(3*time.Second), dropCause) // flapping: counted
	if w != 4*time.Minute {
		t.Fatalf("slow retry after a crash-on-connect = %v, want 4m (doubling kept)", w)
	}
	// A connection that stays up resets it.
	m.attemptStarted()
	m.connected(t0.Add(time.Hour))
	m.dropped(t0.Add(2*time.Hour), dropCause)
	if m.slowDelay != 0 || m.attempt != 0 {
		t.Fatalf("a stable connection did not reset the backoff: %+v", m)
	}
}

func TestMachineRestartGivesFreshBudget(t *testing.T) {
	m := testMachine()
	for range 4 {
		m.attemptStarted()
		m.attemptFailed(t0, transient)
	}
	m.restarted()
	if m.attempt != 0 || m.status != sb.StatusConnecting || m.slowDelay != 0 {
		t.Fatalf("after restart: %+v", m)
	}
}

// The last drop's cause outlives the reconnect that clears the error, and
// a failed attempt does not overwrite it.
func TestMachineKeepsTheLastDropAcrossReconnects(t *testing.T) {
	m := testMachine()
	m.attemptStarted()
	m.connected(t0)
	if m.lastDrop != nil {
		t.Fatalf("last drop %+v before any drop", m.lastDrop)
	}
	m.dropped(t0.Add(time.Minute), dropCause)
	m.attemptStarted()
	m.attemptFailed(t0.Add(61*time.Second), transient)
	m.attemptStarted()
	m.connected(t0.Add(65 * time.Second))
	if m.err != nil {
		t.Fatalf("error %+v after reconnecting", m.err)
	}
	if d := m.lastDrop; d == nil || d.Code != "process_exited" || d.Phase != sb.PhaseRuntime || !d.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("last drop %+v, want the runtime drop at t0+1m", d)
	}
}
