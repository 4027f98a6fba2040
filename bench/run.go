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
	ScenarioEndpoint = "endpoint" // a client through the daemon's /mcp against the same client direct
	ScenarioDaemon   = "daemon-scale"
)

// AllScenarios lists every scenario.
var AllScenarios = []string{ScenarioOverhead, ScenarioRecovery, ScenarioSlow, ScenarioScale, ScenarioEndpoint, ScenarioDaemon}

// Config sizes a run. FullConfig and QuickConfig are the two sizes the
// driver offers.
type Config struct {
	// Testserver is the path of the testserver binary (see BuildTestserver).
	Testserver string
	// Switchboard is the path of the switchboard binary (see
	// BuildSwitchboard); only the endpoint and daemon-scale scenarios need
	// it.
	Switchboard string
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
	// ProfileDir, if set, receives pprof allocs profiles around each block,
	// and the endpoint scenario's serve its CPU profile
	// (serve-endpoint-cpu.pprof).
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
	// started afterwards to attribute their memory; zero skips that. The
	// daemon-scale scenario puts as many servers in the daemon's database.
	StdioSessions, HTTPSessions, StartConcurrency int
	ScaleProfileSessions                          int

	// EndpointPayloads are the sizes in bytes of the echo text of the
	// endpoint scenario; it makes Calls and ConcurrentCalls calls per side
	// and repetition, like the overhead scenario, EndpointReps times.
	EndpointPayloads []int
	EndpointReps     int

	// DaemonReps repetitions of the daemon-scale scenario, each a daemon
	// with no server, one with StdioSessions and one with HTTPSessions. A
	// daemon's servers must connect within DaemonTimeout; the list is
	// polled every DaemonPollEvery. Once they have, the daemon is left idle
	// DaemonSettle, then its memory sampled DaemonSamples times,
	// DaemonSampleEvery apart.
	DaemonReps                      int
	DaemonTimeout, DaemonPollEvery  time.Duration
	DaemonSettle, DaemonSampleEvery time.Duration
	DaemonSamples                   int

	// Log, if set, receives a line per measurement as the run goes.
	Log io.Writer `json:"-"`
}

// FullConfig is the configuration of a full run, as written up in
// BENCHMARKS.md; reps overrides the overhead and endpoint repetitions if
// positive.
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
		EndpointPayloads:     []int{1 << 10, 32 << 10}, EndpointReps: 5,
		DaemonReps:    3,
		DaemonTimeout: 5 * time.Minute, DaemonPollEvery: time.Second,
		DaemonSettle: 2 * time.Second, DaemonSampleEvery: 300 * time.Millisecond, DaemonSamples: 10,
	}
	if reps > 0 {
		c.Reps, c.EndpointReps = reps, reps
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
		EndpointPayloads:     []int{1 << 10, 32 << 10}, EndpointReps: 1,
		DaemonReps:    1,
		DaemonTimeout: time.Minute, DaemonPollEvery: 100 * time.Millisecond,
		DaemonSettle: 100 * time.Millisecond, DaemonSampleEvery: 50 * time.Millisecond, DaemonSamples: 3,
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

// NeedsSwitchboard reports whether the scenarios c runs need the
// switchboard binary.
func (c *Config) NeedsSwitchboard() bool {
	return c.wants(ScenarioEndpoint) || c.wants(ScenarioDaemon)
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
	case c.NeedsSwitchboard() && c.Switchboard == "":
		return errors.New("no switchboard binary (the endpoint and daemon-scale scenarios run it)")
	case c.wants(ScenarioEndpoint) && (len(c.EndpointPayloads) == 0 || c.EndpointReps < 1):
		return errors.New("no endpoint payload sizes or repetitions")
	case c.wants(ScenarioDaemon) && (c.DaemonReps < 1 || c.DaemonSamples < 1 || c.DaemonTimeout <= 0 || c.DaemonPollEvery <= 0 ||
		c.DaemonSettle < 0 || c.DaemonSampleEvery <= 0):
		return errors.New("daemon-scale sizes must be positive")
	}
	for _, n := range c.EndpointPayloads {
		if n < 1 {
			return errors.New("endpoint payload sizes must be positive")
		}
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
	// Endpoint is the endpoint scenario: one result per payload size and
	// mode, with Payload set.
	Endpoint     []*OverheadResult `json:"endpoint,omitempty"`
	EndpointInfo *EndpointInfo     `json:"endpoint_info,omitempty"`
	Daemon       []*DaemonResult   `json:"daemon,omitempty"`
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
	if err != nil && (cfg.wants(ScenarioScale) || cfg.wants(ScenarioDaemon)) {
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
	if cfg.wants(ScenarioEndpoint) {
		done := track(ScenarioEndpoint)
		if rep.Endpoint, rep.EndpointInfo, err = runEndpoint(ctx, &cfg); err != nil {
			return nil, err
		}
		done()
	}
	if cfg.wants(ScenarioDaemon) {
		done := track(ScenarioDaemon)
		if rep.Daemon, err = runDaemonScale(ctx, &cfg); err != nil {
			return nil, err
		}
		done()
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}
