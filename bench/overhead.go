package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Modes of an overhead measurement.
const (
	Sequential = "sequential" // one caller, each call waits for the previous one
	Concurrent = "concurrent" // Config.Callers callers at once
)

// Sample is one measurement of one side: a block of calls.
type Sample struct {
	Calls   int           `json:"calls"`
	Errors  int           `json:"errors"`
	Elapsed time.Duration `json:"elapsed"`
	P50     time.Duration `json:"p50"`
	P99     time.Duration `json:"p99"`
	// Allocations per call over the block, from runtime.MemStats (Mallocs
	// and TotalAlloc deltas). In memory they include the in-process
	// server's; over stdio only this process's (the client's).
	AllocsPerCall float64 `json:"allocs_per_call"`
	BytesPerCall  float64 `json:"bytes_per_call"`
	// CPU time per call over the block, endpoint scenario only: this
	// process's (the MCP clients'), the Switchboard daemon's and the
	// upstream testserver's.
	ClientCPU   time.Duration `json:"client_cpu,omitempty"`
	DaemonCPU   time.Duration `json:"daemon_cpu,omitempty"`
	UpstreamCPU time.Duration `json:"upstream_cpu,omitempty"`
}

// CallsPerSec is the block's throughput.
func (s Sample) CallsPerSec() float64 {
	if s.Elapsed <= 0 {
		return math.NaN()
	}
	return float64(s.Calls) / s.Elapsed.Seconds()
}

// measure makes calls echo calls with callers goroutines (calls is rounded
// down to a multiple of callers) and returns the block's figures. lat is
// scratch space of at least calls entries, allocated by the caller so that
// it is not counted.
func measure(ctx context.Context, echo func(context.Context) error, calls, callers int, lat []time.Duration) Sample {
	return measureProbe(ctx, echo, calls, callers, lat, nil)
}

// measureProbe is measure with a probe: if not nil, it is called just
// before the first call, and the function it returns just after the last
// call returned, with the block's sample to fill in.
func measureProbe(ctx context.Context, echo func(context.Context) error, calls, callers int, lat []time.Duration,
	probe func() func(*Sample)) Sample {
	per := calls / callers
	calls = per * callers
	lat = lat[:calls]
	var errs atomic.Int64
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var probed func(*Sample)
	if probe != nil {
		probed = probe()
	}
	start := time.Now()
	if callers == 1 {
		for i := range lat {
			t := time.Now()
			if echo(ctx) != nil {
				errs.Add(1)
			}
			lat[i] = time.Since(t)
		}
	} else {
		var wg sync.WaitGroup
		for g := range callers {
			wg.Go(func() {
				mine := lat[g*per : (g+1)*per]
				for i := range mine {
					t := time.Now()
					if echo(ctx) != nil {
						errs.Add(1)
					}
					mine[i] = time.Since(t)
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	var smp Sample
	if probed != nil {
		probed(&smp)
	}
	runtime.ReadMemStats(&m1)
	slices.Sort(lat)
	smp.Calls, smp.Errors, smp.Elapsed = calls, int(errs.Load()), elapsed
	smp.P50, smp.P99 = durationQuantile(lat, 0.50), durationQuantile(lat, 0.99)
	smp.AllocsPerCall = float64(m1.Mallocs-m0.Mallocs) / float64(calls)
	smp.BytesPerCall = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(calls)
	return smp
}

// OverheadResult is every repetition of every side of one transport and
// mode.
type OverheadResult struct {
	Transport string              `json:"transport"`
	Mode      string              `json:"mode"`
	Callers   int                 `json:"callers"`
	Payload   int                 `json:"payload,omitempty"` // bytes of echo text (endpoint scenario)
	Sides     []string            `json:"sides"`
	Samples   map[string][]Sample `json:"samples"` // by side, one per repetition
}

// Row summarises one side of r.
type OverheadRow struct {
	Side          string
	CallsPerSec   Stat
	P50, P99      Stat // µs
	Allocs, Bytes Stat // per call
	VsDirect      Stat // throughput ratio to the direct go-sdk, paired per repetition
	VsFloor       Stat // throughput ratio to the floor, paired per repetition
	AddedP50      Stat // µs over the direct go-sdk's p50, paired per repetition
	AddedP99      Stat // µs over the direct go-sdk's p99, paired per repetition
	Errors        int
}

// Rows summarises r, one row per side.
func (r *OverheadResult) Rows() []OverheadRow {
	var rows []OverheadRow
	for _, name := range r.Sides {
		ss := r.Samples[name]
		row := OverheadRow{Side: name}
		var cps, p50, p99, allocs, bytes, vsDirect, vsFloor, added50, added []float64
		for i, s := range ss {
			row.Errors += s.Errors
			cps = append(cps, s.CallsPerSec())
			p50 = append(p50, micros(s.P50))
			p99 = append(p99, micros(s.P99))
			allocs = append(allocs, s.AllocsPerCall)
			bytes = append(bytes, s.BytesPerCall)
			vsDirect = append(vsDirect, r.pair(SideDirect, i, func(d Sample) float64 { return s.CallsPerSec() / d.CallsPerSec() }))
			vsFloor = append(vsFloor, r.pair(SideFloor, i, func(f Sample) float64 { return s.CallsPerSec() / f.CallsPerSec() }))
			added50 = append(added50, r.pair(SideDirect, i, func(d Sample) float64 { return micros(s.P50 - d.P50) }))
			added = append(added, r.pair(SideDirect, i, func(d Sample) float64 { return micros(s.P99 - d.P99) }))
		}
		row.CallsPerSec, row.P50, row.P99 = Summarize(cps), Summarize(p50), Summarize(p99)
		row.Allocs, row.Bytes = Summarize(allocs), Summarize(bytes)
		row.VsDirect, row.VsFloor = Summarize(vsDirect), Summarize(vsFloor)
		row.AddedP50, row.AddedP99 = Summarize(added50), Summarize(added)
		rows = append(rows, row)
	}
	return rows
}

// pair applies f to the repetition i of side other, or returns NaN.
func (r *OverheadResult) pair(other string, i int, f func(Sample) float64) float64 {
	ss := r.Samples[other]
	if i >= len(ss) {
		return math.NaN()
	}
	return f(ss[i])
}

// Row returns the summary of one side.
func (r *OverheadResult) Row(side string) (OverheadRow, bool) {
	for _, row := range r.Rows() {
		if row.Side == side {
			return row, true
		}
	}
	return OverheadRow{}, false
}

// allSides is the order sides are set up and listed in.
var allSides = []string{SideFloor, SideDirect, SideSession, SideExecutor}

// runOverhead measures every side over one transport, sequentially and
// with cfg.Callers callers, interleaving the sides in every repetition.
// With profile set it then attributes each side's allocations.
func runOverhead(ctx context.Context, cfg *Config, transport string) ([]*OverheadResult, []*AllocProfile, error) {
	sides := make([]*side, 0, len(allSides))
	defer func() {
		for _, s := range sides {
			s.close()
		}
	}()
	for _, name := range allSides {
		s, err := newSide(ctx, name, transport, cfg.Testserver)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", transport, name, err)
		}
		sides = append(sides, s)
		if err := s.echo(ctx); err != nil { // qualification: the path answers correctly
			return nil, nil, fmt.Errorf("%s %s: first call: %w", transport, name, err)
		}
	}

	modes := []struct {
		mode    string
		callers int
		calls   int
	}{
		{Sequential, 1, cfg.Calls},
		{Concurrent, cfg.Callers, cfg.ConcurrentCalls},
	}
	lat := make([]time.Duration, max(cfg.Calls, cfg.ConcurrentCalls))
	var results []*OverheadResult
	for _, m := range modes {
		res := &OverheadResult{Transport: transport, Mode: m.mode, Callers: m.callers, Sides: allSides, Samples: map[string][]Sample{}}
		results = append(results, res)
		for rep := range cfg.Reps {
			for i := range sides {
				s := sides[(i+rep)%len(sides)] // rotate the order every repetition
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				measure(ctx, s.echo, cfg.Warmup, m.callers, lat)
				smp := measure(ctx, s.echo, m.calls, m.callers, lat)
				res.Samples[s.name] = append(res.Samples[s.name], smp)
				cfg.logf("overhead %s %s rep %d/%d %-17s %8.0f calls/s p50 %6.0fµs p99 %6.0fµs %6.0f allocs %8.0f B/call errors %d",
					transport, m.mode, rep+1, cfg.Reps, s.name, smp.CallsPerSec(), micros(smp.P50), micros(smp.P99),
					smp.AllocsPerCall, smp.BytesPerCall, smp.Errors)
			}
		}
	}

	var profiles []*AllocProfile
	if cfg.ProfileCalls > 0 {
		for _, s := range sides {
			p, err := profileAllocs(ctx, cfg, transport, s)
			if err != nil {
				return nil, nil, err
			}
			profiles = append(profiles, p)
		}
	}
	return results, profiles, nil
}
