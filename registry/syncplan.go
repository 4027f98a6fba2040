package registry

import "time"

// This file decides when a replica compares everything with the store (a
// full resync): plain methods that take the current time and say when the
// next one is due. No I/O, no goroutines, no clock: RunSync (sync.go)
// performs the resyncs and feeds their outcomes in, and tests step the plan
// directly.
//
//	          interval passed, or the feed (re)connected / fell behind
//	waiting ───────────────────────────────────────────────► resync due (at once)
//	   ▲                                                          │
//	   │ ok: next one interval later                               │ failed: retry after 1, 2, 4 … 30 s
//	   └──────────────────────────────────────────────────────────┘ (sooner than the interval: a failed
//	                                                                  resync may hide missed changes)

// resyncPlan is when the next full resync is due. Its zero value has none
// due; start sets the first.
type resyncPlan struct {
	interval time.Duration // between successful resyncs; 0: none but those requested and retries
	failures int           // consecutive failed resyncs
	due      time.Time     // zero: none due
}

// start plans the first periodic resync, one interval from now.
func (p *resyncPlan) start(now time.Time) {
	p.due = time.Time{}
	if p.interval > 0 {
		p.due = now.Add(p.interval)
	}
}

// requested: the change feed (re)connected or dropped changes, so
// notifications may have been missed; resync at once.
func (p *resyncPlan) requested(now time.Time) { p.due = now }

// succeeded: the registry matches the store; the next periodic resync is
// one interval away.
func (p *resyncPlan) succeeded(now time.Time) {
	p.failures = 0
	p.start(now)
}

// failed: the store could not be read; retry with backoff, never later
// than the interval would have.
func (p *resyncPlan) failed(now time.Time) time.Duration {
	wait := min(resyncRetryMin<<min(p.failures, 8), resyncRetryMax)
	if p.interval > 0 {
		wait = min(wait, p.interval)
	}
	p.failures++
	p.due = now.Add(wait)
	return wait
}

// wait is how long from now until the next resync is due: 0 if it is due
// now, and ok false if none is planned.
func (p *resyncPlan) wait(now time.Time) (d time.Duration, ok bool) {
	if p.due.IsZero() {
		return 0, false
	}
	return max(0, p.due.Sub(now)), true
}
