package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// SlowResult is the slow-tool scenario for one side: Config.SlowCallers
// callers calling a tool that sleeps Config.SlowDelay, for
// Config.SlowDuration, once per repetition.
type SlowResult struct {
	Transport string        `json:"transport"`
	Side      string        `json:"side"`
	Callers   int           `json:"callers"`
	Delay     time.Duration `json:"delay"`
	Duration  time.Duration `json:"duration"`
	Runs      []SlowRun     `json:"runs"`
}

// SlowRun is one repetition.
type SlowRun struct {
	Calls   int           `json:"calls"`
	Errors  int           `json:"errors"`
	Elapsed time.Duration `json:"elapsed"` // until the last caller finished
	// Goroutines and heap in use of this whole process, before the run and
	// at their peak (sampled every 50 ms). In memory the server's count too.
	BaseGoroutines int    `json:"base_goroutines"`
	PeakGoroutines int    `json:"peak_goroutines"`
	BaseHeap       uint64 `json:"base_heap"`
	PeakHeap       uint64 `json:"peak_heap"`
}

// Ceiling is the Little's-law ceiling: callers / delay.
func (r *SlowResult) Ceiling() float64 { return float64(r.Callers) / r.Delay.Seconds() }

// Throughput is the run's completed calls per second.
func (r SlowRun) Throughput() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// runSlowTools measures the direct go-sdk and executor.Execute sides over
// both transports, interleaved per repetition.
func runSlowTools(ctx context.Context, cfg *Config) ([]*SlowResult, error) {
	type entry struct {
		s   *side
		res *SlowResult
	}
	var entries []entry
	defer func() {
		for _, e := range entries {
			e.s.close()
		}
	}()
	for _, transport := range []string{InMemory, Stdio} {
		for _, name := range []string{SideDirect, SideExecutor} {
			s, err := newSide(ctx, name, transport, cfg.Testserver)
			if err != nil {
				return nil, fmt.Errorf("slow tools %s %s: %w", transport, name, err)
			}
			entries = append(entries, entry{s, &SlowResult{Transport: transport, Side: name, Callers: cfg.SlowCallers,
				Delay: cfg.SlowDelay, Duration: cfg.SlowDuration}})
		}
	}
	args := map[string]any{"ms": cfg.SlowDelay.Milliseconds()}
	for rep := range cfg.SlowReps {
		for i := range entries {
			e := entries[(i+rep)%len(entries)]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			run := slowRun(ctx, e.s, args, cfg.SlowCallers, cfg.SlowDuration)
			e.res.Runs = append(e.res.Runs, run)
			cfg.logf("slow tools %s %-17s rep %d/%d: %d calls in %.2fs = %.1f calls/s (ceiling %.0f), errors %d, peak goroutines %d, peak heap %.1f MiB",
				e.res.Transport, e.res.Side, rep+1, cfg.SlowReps, run.Calls, run.Elapsed.Seconds(), run.Throughput(),
				e.res.Ceiling(), run.Errors, run.PeakGoroutines, float64(run.PeakHeap)/(1<<20))
		}
	}
	out := make([]*SlowResult, len(entries))
	for i, e := range entries {
		out[i] = e.res
	}
	return out, nil
}

// slowRun runs callers goroutines that each call sleep back to back until
// dur has passed; a call started before then is waited for.
func slowRun(ctx context.Context, s *side, args map[string]any, callers int, dur time.Duration) SlowRun {
	runtime.GC()
	var run SlowRun
	run.BaseGoroutines, run.BaseHeap = readLoad()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	var peakG int
	var peakH uint64
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			g, h := readLoad()
			peakG, peakH = max(peakG, g), max(peakH, h)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	var calls, errs atomic.Int64
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				res, err := s.tool(ctx, "sleep", args)
				if err == nil && res != nil && !res.IsError {
					calls.Add(1)
				} else {
					errs.Add(1)
					time.Sleep(time.Millisecond) // a failing path must not spin
				}
			}
		})
	}
	wg.Wait()
	run.Elapsed = time.Since(start)
	close(stop)
	<-sampled
	run.Calls, run.Errors = int(calls.Load()), int(errs.Load())
	run.PeakGoroutines, run.PeakHeap = peakG, peakH
	return run
}

// readLoad reads the goroutine count and the heap in use (the bytes of
// in-use heap spans, runtime.MemStats.HeapInuse) without stopping the world.
func readLoad() (goroutines int, heapInuse uint64) {
	s := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), s[1].Value.Uint64() + s[2].Value.Uint64()
}
