// Package stats keeps the last hour of every server's tool calls in
// memory, in minute buckets: how many ended, how many failed, and a
// histogram of their durations from which the median and the 99th
// percentile are read. It is fed by wrapping the executor's plugins
// (Instrument), the one place every tool call ends, whichever surface
// sent it (the API, /mcp, a toolset); the HTTP API serves it as
// api.Stats, and the web page draws it.
//
// Memory is bounded: a server that has had no call in the hour holds
// nothing once read past (see Series.Daemon), and a busy one at most 60
// buckets of a few hundred bytes.
package stats

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Minutes is the span kept, in minute buckets.
const Minutes = api.StatsMinutes

// The histogram's bins: bin 0 holds durations under minBound, bin i
// (1 ≤ i < bins-1) those in [minBound·√2^(i-1), minBound·√2^i), and the
// last everything from minBound·√2^(bins-2) (7 minutes) on. A bin √2 wide
// puts an estimate within 19 % of the truth, in 184 bytes a minute.
const (
	bins     = 46
	minBound = 100 * time.Microsecond
)

// Series is the per-server and daemon-wide record of the last hour. The
// zero value is not usable; call New. It is safe for concurrent use.
type Series struct {
	now func() time.Time

	mu      sync.Mutex
	daemon  ring
	servers map[string]*ring
}

// New returns an empty series that reads the time from now (time.Now if
// nil): tests pass a clock of their own.
func New(now func() time.Time) *Series {
	if now == nil {
		now = time.Now
	}
	return &Series{now: now, servers: map[string]*ring{}}
}

// ring holds the minutes of the hour by their Unix minute modulo Minutes;
// a slot whose minute is older than the hour is stale and read as empty.
// A slot is allocated at its first call.
type ring [Minutes]*bucket

type bucket struct {
	minute int64 // Unix time / 60
	calls  uint64
	errors uint64
	hist   [bins]uint32
}

// Record counts one call of server that ended now after d, failed or not.
func (s *Series) Record(server string, d time.Duration, failed bool) {
	m := s.now().Unix() / 60
	bin := binOf(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.servers[server]
	if r == nil {
		r = new(ring)
		s.servers[server] = r
	}
	r.add(m, bin, failed)
	s.daemon.add(m, bin, failed)
}

func (r *ring) add(m int64, bin int, failed bool) {
	b := r[m%Minutes]
	if b == nil {
		b = &bucket{}
		r[m%Minutes] = b
	}
	if b.minute != m {
		*b = bucket{minute: m}
	}
	b.calls++
	if failed {
		b.errors++
	}
	b.hist[bin]++
}

// Forget drops what is kept of server (deleted: one created later under
// its name starts empty).
func (s *Series) Forget(server string) {
	s.mu.Lock()
	delete(s.servers, server)
	s.mu.Unlock()
}

// Server returns the hour of server; zero counts if it had no call.
func (s *Series) Server(server string) api.Stats {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.read(s.servers[server], now)
	st.Server = server
	return st
}

// Daemon returns the hour of every call, with the hour's totals of each
// of servers (the configured ones, in their order). It also drops what
// is kept of a server whose last call is older than the hour.
func (s *Series) Daemon(servers []string) api.Stats {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.read(&s.daemon, now)
	st.Servers = make([]api.ServerStats, 0, len(servers))
	first := now.Unix()/60 - Minutes + 1
	for name, r := range s.servers {
		if !r.liveSince(first) {
			delete(s.servers, name)
		}
	}
	for _, name := range servers {
		line := api.ServerStats{Server: name}
		if r := s.servers[name]; r != nil {
			line.StatsSummary = summarize(r, first)
		}
		st.Servers = append(st.Servers, line)
	}
	return st
}

// read returns the hour of r (nil: no calls) up to now. The caller holds
// s.mu.
func (s *Series) read(r *ring, now time.Time) api.Stats {
	last := now.Unix() / 60
	first := last - Minutes + 1
	st := api.Stats{From: time.Unix(first*60, 0).UTC(), To: now.UTC(), Minutes: make([]api.StatsMinute, Minutes)}
	for i := range st.Minutes {
		m := first + int64(i)
		st.Minutes[i].Start = time.Unix(m*60, 0).UTC()
		if r == nil {
			continue
		}
		if b := r[m%Minutes]; b != nil && b.minute == m {
			st.Minutes[i].StatsSummary = b.summary()
		}
	}
	if r != nil {
		st.StatsSummary = summarize(r, first)
	}
	return st
}

// liveSince reports whether r has a call in a minute from first on.
func (r *ring) liveSince(first int64) bool {
	for _, b := range r {
		if b != nil && b.minute >= first {
			return true
		}
	}
	return false
}

// summarize adds up the minutes of r from first on.
func summarize(r *ring, first int64) api.StatsSummary {
	var sum bucket
	for _, b := range r {
		if b == nil || b.minute < first {
			continue
		}
		sum.calls += b.calls
		sum.errors += b.errors
		for i, n := range b.hist {
			sum.hist[i] += n
		}
	}
	return sum.summary()
}

func (b *bucket) summary() api.StatsSummary {
	s := api.StatsSummary{Calls: b.calls, Errors: b.errors}
	if b.calls > 0 {
		s.P50MS = b.quantile(0.50)
		s.P99MS = b.quantile(0.99)
	}
	return s
}

// quantile estimates the q-quantile of the durations, in milliseconds:
// the bin that holds it, and within the bin the point as far along (on a
// log scale) as the quantile's rank is among the bin's calls.
func (b *bucket) quantile(q float64) float64 {
	var total uint64
	for _, n := range b.hist {
		total += uint64(n)
	}
	rank := q * float64(total)
	var below uint64
	for i, n := range b.hist {
		if n == 0 || float64(below+uint64(n)) < rank {
			below += uint64(n)
			continue
		}
		lo, hi := binBounds(i)
		if i == 0 {
			return round(ms(hi) * (rank - float64(below)) / float64(n))
		}
		if i == bins-1 {
			return ms(lo)
		}
		f := (rank - float64(below)) / float64(n)
		return round(ms(lo) * math.Pow(float64(hi)/float64(lo), f))
	}
	lo, _ := binBounds(bins - 1)
	return ms(lo)
}

// bounds are the upper bounds of the bins but the last, computed once:
// a call's bin is found by a binary search, not a logarithm.
var bounds = func() (b [bins - 1]time.Duration) {
	for i := range b {
		b[i] = time.Duration(float64(minBound) * math.Pow(math.Sqrt2, float64(i)))
	}
	return b
}()

// binOf returns the bin of a duration: the first whose upper bound is
// above it.
func binOf(d time.Duration) int {
	i, found := slices.BinarySearch(bounds[:], d)
	if found {
		i++ // a bound belongs to the bin above it
	}
	return i
}

// binBounds returns the bounds of bin i: [lo, hi).
func binBounds(i int) (lo, hi time.Duration) {
	if i == 0 {
		return 0, minBound
	}
	if i == bins-1 {
		return bounds[i-1], time.Duration(math.MaxInt64)
	}
	return bounds[i-1], bounds[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round keeps three significant digits: the estimate has no more.
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// Instrument wraps a plugin so that its calls are recorded: every call
// that reaches a plugin, a refused one (unknown tool, not connected)
// among them, counted as failed when it returns an error.
func (s *Series) Instrument(p executor.Plugin) executor.Plugin {
	return &instrumented{Plugin: p, s: s}
}

// instrumented is a recorded plugin: Serves and Servers are the wrapped
// plugin's.
type instrumented struct {
	executor.Plugin
	s *Series
}

func (i *instrumented) Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error) {
	start := time.Now()
	res, err := i.Plugin.Invoke(ctx, server, tool, args, opts)
	i.s.Record(server, time.Since(start), err != nil)
	return res, err
}
