package stats

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// clock is a settable time for the series.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)} }

// TestCallsLandInTheirMinute: each call counts in the minute it ended, the
// hour reads oldest first with the current minute last, and the totals
// add the minutes up.
func TestCallsLandInTheirMinute(t *testing.T) {
	c := newClock()
	s := New(c.now)
	s.Record("a", 2*time.Millisecond, false)
	s.Record("a", 3*time.Millisecond, true)
	c.add(time.Minute)
	s.Record("a", 5*time.Millisecond, false)
	s.Record("b", time.Second, false)

	st := s.Server("a")
	if len(st.Minutes) != Minutes {
		t.Fatalf("%d minutes, want %d", len(st.Minutes), Minutes)
	}
	last, prev := st.Minutes[Minutes-1], st.Minutes[Minutes-2]
	if last.Calls != 1 || last.Errors != 0 || prev.Calls != 2 || prev.Errors != 1 {
		t.Errorf("last two minutes %+v, %+v; want 1 call, then 2 with 1 error", prev, last)
	}
	if want := time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC); !last.Start.Equal(want) {
		t.Errorf("the current minute starts %v, want %v", last.Start, want)
	}
	if want := time.Date(2026, 12, 2, 9, 2, 0, 0, time.UTC); !st.From.Equal(want) {
		t.Errorf("the hour starts %v, want %v", st.From, want)
	}
	if st.Calls != 3 || st.Errors != 1 || st.Server != "a" {
		t.Errorf("hour of a: %+v", st.StatsSummary)
	}
	d := s.Daemon([]string{"a", "b", "idle"})
	if d.Calls != 4 || d.Minutes[Minutes-1].Calls != 2 {
		t.Errorf("daemon: %d calls, %d in the current minute; want 4, 2", d.Calls, d.Minutes[Minutes-1].Calls)
	}
	var lines []string
	for _, l := range d.Servers {
		lines = append(lines, l.Server)
		if l.Server == "idle" && l.Calls != 0 {
			t.Errorf("idle counted %d calls", l.Calls)
		}
	}
	if !slices.Equal(lines, []string{"a", "b", "idle"}) {
		t.Errorf("daemon lines %v", lines)
	}
}

// TestAnHourLaterTheMinutesAreGone: a minute older than the hour is not
// counted, its slot is reused for the new minute, and a server with no
// call in the hour is dropped when the daemon's hour is read.
func TestAnHourLaterTheMinutesAreGone(t *testing.T) {
	c := newClock()
	s := New(c.now)
	s.Record("old", time.Millisecond, true)
	s.Record("busy", time.Millisecond, false)
	c.add(59 * time.Minute)
	if st := s.Server("old"); st.Calls != 1 || st.Minutes[0].Calls != 1 {
		t.Fatalf("59 minutes on: %d calls, first minute %d; want 1, 1", st.Calls, st.Minutes[0].Calls)
	}
	c.add(time.Minute)
	s.Record("busy", time.Millisecond, false) // the same slot as the first minute
	if st := s.Server("busy"); st.Calls != 1 || st.Minutes[Minutes-1].Calls != 1 {
		t.Errorf("an hour on: busy has %d calls (%d this minute); want 1 (1)", st.Calls, st.Minutes[Minutes-1].Calls)
	}
	if st := s.Server("old"); st.Calls != 0 || st.Errors != 0 || st.P50MS != 0 {
		t.Errorf("an hour on: old still counts %+v", st.StatsSummary)
	}
	if d := s.Daemon(nil); d.Calls != 1 {
		t.Errorf("the daemon's hour counts %d calls, want 1", d.Calls)
	}
	if got := s.names(); !slices.Equal(got, []string{"busy"}) {
		t.Errorf("kept after the daemon's hour was read: %v, want [busy]", got)
	}
}

// TestPercentilesAreWithinABin: the median and the 99th percentile land
// within the √2 bin of the true values.
func TestPercentilesAreWithinABin(t *testing.T) {
	s := New(newClock().now)
	// 98 calls of 10 ms, 2 of 800 ms: median 10 ms, p99 800 ms.
	for range 98 {
		s.Record("x", 10*time.Millisecond, false)
	}
	s.Record("x", 800*time.Millisecond, false)
	s.Record("x", 800*time.Millisecond, false)
	st := s.Server("x")
	within := func(got, want float64) bool { return got >= want/1.42 && got <= want*1.42 }
	if !within(st.P50MS, 10) || !within(st.P99MS, 800) {
		t.Errorf("p50 %v ms, p99 %v ms; want about 10 and 800", st.P50MS, st.P99MS)
	}
	if m := st.Minutes[Minutes-1]; m.P50MS != st.P50MS || m.P99MS != st.P99MS {
		t.Errorf("the minute's percentiles %v/%v differ from the hour's %v/%v (all calls in one minute)", m.P50MS, m.P99MS, st.P50MS, st.P99MS)
	}
	for _, d := range []time.Duration{0, 50 * time.Microsecond, time.Hour} {
		s := New(newClock().now)
		s.Record("y", d, false)
		if st := s.Server("y"); st.P50MS < 0 || st.P50MS > 420000 {
			t.Errorf("one call of %v: p50 %v ms", d, st.P50MS)
		}
	}
}

// TestForgetStartsAfreshUnderTheName: a deleted server's calls are not
// those of a new server of the same name; the daemon keeps counting them.
func TestForgetStartsAfreshUnderTheName(t *testing.T) {
	s := New(newClock().now)
	s.Record("gone", time.Millisecond, false)
	s.Forget("gone")
	if st := s.Server("gone"); st.Calls != 0 {
		t.Errorf("after Forget: %d calls", st.Calls)
	}
	if d := s.Daemon(nil); d.Calls != 1 {
		t.Errorf("the daemon's hour: %d calls, want 1", d.Calls)
	}
}

// plugin answers every call with err.
type plugin struct{ err error }

func (p plugin) Serves(string) bool { return true }
func (p plugin) Servers() []string  { return []string{"s"} }
func (p plugin) Invoke(context.Context, string, string, any, sb.InvokeOptions) (*upstream.Result, error) {
	if p.err != nil {
		return nil, p.err
	}
	return &upstream.Result{}, nil
}

// TestInstrumentCountsEveryOutcome: a call that fails counts as an error,
// one that succeeds does not, both as calls of their server.
func TestInstrumentCountsEveryOutcome(t *testing.T) {
	s := New(nil)
	ok, bad := s.Instrument(plugin{}), s.Instrument(plugin{err: errors.New("refused")})
	ok.Invoke(t.Context(), "s", "t", nil, sb.InvokeOptions{})
	bad.Invoke(t.Context(), "s", "t", nil, sb.InvokeOptions{})
	if st := s.Server("s"); st.Calls != 2 || st.Errors != 1 {
		t.Errorf("%+v, want 2 calls and 1 error", st.StatsSummary)
	}
}

// BenchmarkRecord is the cost a call pays for being counted, from many
// goroutines on servers of their own.
func BenchmarkRecord(b *testing.B) {
	s := New(nil)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		name := names[n.Add(1)%int64(len(names))]
		for pb.Next() {
			s.Record(name, 3*time.Millisecond, false)
		}
	})
}

// TestBinsHoldTheirBounds: a duration lands in the bin whose bounds hold
// it, the bounds a factor √2 apart.
func TestBinsHoldTheirBounds(t *testing.T) {
	for _, d := range []time.Duration{0, minBound - 1, minBound, 141 * time.Microsecond, 142 * time.Microsecond,
		time.Millisecond, 3 * time.Millisecond, time.Second, 7 * time.Minute, time.Hour} {
		i := binOf(d)
		lo, hi := binBounds(i)
		if d < lo || d >= hi {
			t.Errorf("%v in bin %d [%v, %v)", d, i, lo, hi)
		}
	}
	for i := 1; i < bins-1; i++ {
		lo, hi := binBounds(i)
		if r := float64(hi) / float64(lo); r < 1.41 || r > 1.42 {
			t.Errorf("bin %d [%v, %v) is %.3f wide", i, lo, hi, r)
		}
	}
}

// names returns the servers with calls kept, sorted (for tests).
func (s *Series) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.servers))
	for n := range s.servers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
