package registry

import (
	"testing"
	"time"
)

// The plan, stepped by hand: periodic resyncs, one at once when the feed
// asks, a backoff of 1, 2, 4 s on failures that never exceeds the interval,
// and the interval again after a success.
func TestResyncPlan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := resyncPlan{interval: 5 * time.Second}
	expect := func(now time.Time, want time.Duration) {
		t.Helper()
		if got, ok := p.wait(now); !ok || got != want {
			t.Fatalf("at %v: wait %v (planned %v), want %v", now.Sub(t0), got, ok, want)
		}
	}
	p.start(t0)
	expect(t0, 5*time.Second)
	p.requested(at(1)) // the feed reconnected
	expect(at(1), 0)
	expect(at(2), 0) // overdue is due now
	p.succeeded(at(2))
	expect(at(2), 5*time.Second)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := p.failed(at(10)); got != want {
			t.Fatalf("failure %d: retry in %v, want %v", i+1, got, want)
		}
	}
	p.succeeded(at(20))
	if got := p.failed(at(21)); got != time.Second {
		t.Fatalf("a failure after a success: retry in %v, want 1s (the backoff starts over)", got)
	}

	none := resyncPlan{} // interval 0: only requested resyncs and their retries
	none.start(t0)
	if _, ok := none.wait(t0); ok {
		t.Fatal("a resync is planned with no interval")
	}
	none.requested(t0)
	if d, ok := none.wait(t0); !ok || d != 0 {
		t.Fatalf("requested: wait %v %v", d, ok)
	}
	if got := none.failed(t0); got != time.Second {
		t.Fatalf("retry in %v", got)
	}
	none.succeeded(at(1))
	if _, ok := none.wait(at(1)); ok {
		t.Fatal("a resync is planned after a success with no interval")
	}
}
