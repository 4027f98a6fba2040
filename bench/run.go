package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"
)

// Scenarios, in the order Run runs them.
const (
	ScenarioOverhead = "overhead" // library overhead against direct go-sdk and the floor, with alloc profiles
	ScenarioRecovery = "recovery" // kill -9 of a stdio server
	ScenarioSlow     = "slow"     // 200 callers of a 500 ms tool
	ScenarioScale    = "scale"    // 1,000 stdio and 2,000 HTTP sessions
)

// AllScenarios lists every scenario.
var AllScenarios = []string{ScenarioOverhead, ScenarioRecovery, ScenarioSlow, ScenarioScale}

// Config sizes a run. FullConfig and QuickConfig are the two sizes the
// driver offers.
type Config struct {
	// Testserver is the path of the testserver binary (see BuildTestserver).
	Testserver string
	// Scenarios to run; empty means all.
	Scenarios []string

	// Reps is the number of interleaved repetitions of each overhead
	// comparison.
	Reps int
	// Calls per side and repetition, sequentially; ConcurrentCalls in all
	// with Callers callers.
	Calls, ConcurrentCalls, Callers int
	// Warmup calls before every measured block.
	Warmup int
	// ProfileCalls is the size of the block whose allocations are
	// attributed per side; zero skips the profiles.
	ProfileCalls int
	// ProfileDir, if set, receives pprof allocs profiles around each block.
	ProfileDir string

	// RecoveryIters is the number of kill -9 iterations.
	RecoveryIters int

	// SlowCallers call a tool sleeping SlowDelay for SlowDuration, SlowReps
	// times per side.
	SlowCallers  int
	SlowDelay    time.Duration
	SlowDuration time.Duration
	SlowReps     int

	// StdioSessions and HTTPSessions are the sizes of the scale runs,
	// started StartConcurrency at a time. ScaleProfileSessions more are
	// started afterwards to attribute their memory; zero skips that.
	StdioSessions, HTTPSessions, StartConcurrency int
	ScaleProfileSessions                          int

	// Log, if set, receives a line per measurement as the run goes.
	Log io.Writer `json:"-"`
}

// FullConfig is the configuration of a full run, as written up in
// BENCHMARKS.md; reps overrides the overhead repetitions if positive.
func FullConfig(testserver string, reps int) Config {
	c := Config{
		Testserver:      testserver,
		Reps:            11,
		Calls:           1000,
		ConcurrentCalls: 2000,
		Callers:         16,
		Warmup:          100,
		ProfileCalls:    1000,
		RecoveryIters:   25,
		SlowCallers:     200,
		SlowDelay:       500 * time.Millisecond,
		SlowDuration:    10 * time.Second,
		SlowReps:        3,
		StdioSessions:   1000, HTTPSessions: 2000, StartConcurrency: 16,
		ScaleProfileSessions: 100,
	}
	if reps > 0 {
		c.Reps = reps
	}
	return c
}

// QuickConfig is a tiny run: every scenario, in seconds, with figures that
// mean nothing beyond "the harness works".
func QuickConfig(testserver string) Config {
	return Config{
		Testserver:      testserver,
		Reps:            1,
		Calls:           64,
		ConcurrentCalls: 64,
		Callers:         16,
		Warmup:          16,
		ProfileCalls:    32,
		RecoveryIters:   2,
		SlowCallers:     200,
		SlowDelay:       500 * time.Millisecond,
		SlowDuration:    time.Second,
		SlowReps:        1,
		StdioSessions:   10, HTTPSessions: 10, StartConcurrency: 16,
		ScaleProfileSessions: 5,
	}
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

func (c *Config) wants(scenario string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, scenario)
}

func (c *Config) validate() error {
	for _, s := range c.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			return fmt.Errorf("unknown scenario %q (have %v)", s, AllScenarios)
		}
	}
	switch {
	case c.Testserver == "":
		return errors.New("no testserver binary")
	case c.Reps < 1, c.Calls < 1, c.Callers < 1, c.ConcurrentCalls < c.Callers, c.Warmup < 0, c.ProfileCalls < 0:
		return errors.New("overhead sizes must be positive (and ConcurrentCalls at least Callers)")
	case c.RecoveryIters < 1, c.SlowCallers < 1, c.SlowReps < 1, c.SlowDelay < time.Millisecond, c.SlowDuration <= 0:
		return errors.New("recovery and slow-tool sizes must be positive")
	case c.StdioSessions < 1, c.HTTPSessions < 1, c.StartConcurrency < 1, c.ScaleProfileSessions < 0:
		return errors.New("scale sizes must be positive")
	}
	return nil
}

// Report is everything a run measured.
type Report struct {
	Env      Env               `json:"env"`
	Config   Config            `json:"config"`
	Elapsed  time.Duration     `json:"elapsed"`
	Overhead []*OverheadResult `json:"overhead,omitempty"`
	Profiles []*AllocProfile   `json:"profiles,omitempty"`
	Recovery *RecoveryResult   `json:"recovery,omitempty"`
	Slow     []*SlowResult     `json:"slow,omitempty"`
	Scale    []*ScaleResult    `json:"scale,omitempty"`
	// Load is the machine's 1-minute load average before and after each
	// scenario: what else was running shows here.
	Load []LoadSample `json:"load"`
	// Runs lists the runs a merged report pools (see Merge); empty for one
	// run.
	Runs []RunInfo `json:"runs,omitempty"`
}

// LoadSample is the load average around one scenario.
type LoadSample struct {
	Scenario string  `json:"scenario"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
}

// loadAvg returns the 1-minute load average, or NaN.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	var l float64
	if _, err := fmt.Sscan(string(data), &l); err != nil {
		return math.NaN()
	}
	return l
}

// Run runs the scenarios cfg selects and returns what they measured. It
// stops every process it started and closes every session before it
// returns, also on error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{Env: ReadEnv(), Config: cfg}
	want := uint64(4*cfg.StdioSessions + 2*cfg.HTTPSessions + 1024)
	nofile, err := RaiseNoFile(want)
	rep.Env.NoFile = nofile
	if err != nil && cfg.wants(ScenarioScale) {
		return nil, err
	}
	cfg.logf("RLIMIT_NOFILE: %s", nofile)

	track := func(scenario string) func() {
		l := LoadSample{Scenario: scenario, Before: loadAvg()}
		return func() {
			l.After = loadAvg()
			rep.Load = append(rep.Load, l)
		}
	}
	if cfg.wants(ScenarioOverhead) {
		done := track(ScenarioOverhead)
		for _, transport := range []string{InMemory, Stdio} {
			res, profs, err := runOverhead(ctx, &cfg, transport)
			if err != nil {
				return nil, err
			}
			rep.Overhead = append(rep.Overhead, res...)
			rep.Profiles = append(rep.Profiles, profs...)
		}
		done()
	}
	if cfg.wants(ScenarioRecovery) {
		done := track(ScenarioRecovery)
		if rep.Recovery, err = runRecovery(ctx, &cfg); err != nil {
			return nil, err
		}
		done()
	}
	if cfg.wants(ScenarioSlow) {
		done := track(ScenarioSlow)
		if rep.Slow, err = runSlowTools(ctx, &cfg); err != nil {
			return nil, err
		}
		done()
	}
	if cfg.wants(ScenarioScale) {
		done := track(ScenarioScale)
		for _, k := range []struct {
			kind string
			n    int
		}{{ScaleStdio, cfg.StdioSessions}, {ScaleHTTP, cfg.HTTPSessions}} {
			r, err := runScale(ctx, &cfg, k.kind, k.n)
			if err != nil {
				return nil, err
			}
			rep.Scale = append(rep.Scale, r)
		}
		done()
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}
