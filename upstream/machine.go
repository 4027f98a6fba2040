package upstream

import (
	"math/rand/v2"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file is the session's state machine: every transition of status,
// attempt counter, reconnect counter and last error happens here, in plain
// methods that take the current time and return what to do next. No I/O, no
// goroutines, no clock: the lifecycle goroutine in session.go performs the
// I/O and feeds the outcomes in, and tests step the machine directly.
//
//	            dial ok                       link dropped (not flapping)
//	connecting ─────────► connected ──────────────────────────► connecting (at once, reconnects+1)
//	   ▲   │                  │ dropped within FlapWindow of a transparent reconnect
//	   │   │ failed (fast)    └──────────────────────────────► counted failure (below)
//	   │   ▼
//	   └─ backoff 2/4/8 s ◄── attempt < max_attempts
//	                          attempt = max_attempts, or not retriable ──► error ── slow retry 60 s … 10 min ──► connecting
//
// The fast-retry budget (attempt) resets after a connection has stayed up
// for StableAfter, so a crash once a week never exhausts it (LangBot's
// counter only grows).

// retryClass says how a failure may be retried.
type retryClass int

const (
	retryFast  retryClass = iota // transient: spend the fast-retry budget, then slow retry
	retrySlow                    // pointless to hammer (command not found): straight to error, slow retry
	retryNever                   // cannot succeed until the config changes (invalid config, 401/403)
)

// policy holds the timing knobs of one session's machine.
type policy struct {
	maxAttempts int
	delays      []time.Duration
	slowFirst   time.Duration
	slowMax     time.Duration
	flapWindow  time.Duration // a drop this soon after a transparent reconnect is a flap
	stableAfter time.Duration // connected this long resets the fast-retry budget
	jitter      func(time.Duration) time.Duration
}

// jitterFraction spreads retries of many sessions that failed together (an
// upstream outage) over ±20% of the nominal delay, so they do not return in
// lockstep. The ranges of 2, 4 and 8 s stay disjoint.
const jitterFraction = 0.2

func defaultJitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - jitterFraction + 2*jitterFraction*rand.Float64()))
}

// machine is the observable state of a session. Its zero value is a session
// that has not started.
type machine struct {
	p policy

	status          sb.Status
	attempt         int // failed attempts in the current retry cycle
	reconnects      int // transparent reconnects since the session started
	err             *sb.ErrorInfo
	lastDrop        *sb.ErrorInfo // why the last connected session was lost; kept across reconnects
	connectedSince  time.Time
	nextRetryAt     time.Time
	slowDelay       time.Duration // next slow-retry wait; 0 = p.slowFirst
	viaReconnect    bool          // the current connection came from a transparent reconnect
	startupTimedOut bool
}

// attemptStarted records the start of a connection attempt.
func (m *machine) attemptStarted() {
	if m.status != sb.StatusError {
		// In error, the status stays error during slow retries, so that a
		// server that is down does not flap between error and connecting
		// every minute; the next_retry_at field tells that it is retrying.
		m.status = sb.StatusConnecting
	}
	m.nextRetryAt = time.Time{}
}

// attemptFailed records a failed attempt and returns how long to wait before
// the next one; retry is false when no attempt should be made until the
// session is restarted or its config changes.
func (m *machine) attemptFailed(now time.Time, f *failure) (wait time.Duration, retry bool) {
	m.err = f.info(now)
	m.viaReconnect = false
	m.attempt++
	switch {
	case f.retry == retryNever:
		m.status = sb.StatusError
		return 0, false
	case f.retry == retrySlow || m.attempt >= m.p.maxAttempts:
		m.status = sb.StatusError
		wait = m.nextSlowDelay()
	default:
		m.status = sb.StatusConnecting
		wait = m.p.jitter(m.p.delays[min(m.attempt, len(m.p.delays))-1])
	}
	m.nextRetryAt = now.Add(wait)
	return wait, true
}

func (m *machine) nextSlowDelay() time.Duration {
	d := m.slowDelay
	if d == 0 {
		d = m.p.slowFirst
	}
	m.slowDelay = min(2*d, m.p.slowMax)
	return m.p.jitter(d)
}

// connected records a successful connection. The retry budget and the
// slow-retry delay are kept: a server that connects and then crashes at
// once has not recovered, and only a connection that stays up (dropped,
// StableAfter) resets them.
func (m *machine) connected(now time.Time) {
	m.status = sb.StatusConnected
	m.err = nil
	m.connectedSince = now
	m.nextRetryAt = time.Time{}
	m.startupTimedOut = false
}

// dropped records the loss of a connected session and returns how long to
// wait before reconnecting: zero for a transparent reconnect, a backoff
// delay when the session is flapping.
func (m *machine) dropped(now time.Time, f *failure) (wait time.Duration, retry bool) {
	up := now.Sub(m.connectedSince)
	m.connectedSince = time.Time{}
	m.lastDrop = f.info(now)
	if up >= m.p.stableAfter {
		m.attempt = 0
		m.slowDelay = 0
	}
	if m.viaReconnect && up < m.p.flapWindow {
		return m.attemptFailed(now, f)
	}
	m.err = f.info(now)
	m.status = sb.StatusConnecting
	m.reconnects++
	m.viaReconnect = true
	return 0, true
}

// restarted records an explicit restart: a fresh retry cycle, at once.
func (m *machine) restarted() {
	m.status = sb.StatusConnecting
	m.connectedSince = time.Time{}
	m.attempt = 0
	m.slowDelay = 0
	m.viaReconnect = false
	m.nextRetryAt = time.Time{}
}
