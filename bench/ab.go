package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// CompareBuilds measures switchboard builds against each other, back to
// back: each build's /mcp/{name} in front of a stdio testserver child (or,
// with cfg.HTTP, of one testserver process serving Streamable HTTP), every
// block of sequential calls interleaved with one of a go-sdk client
// calling a testserver directly (a child of its own over stdio, or that
// same process over HTTP), the order rotating each repetition. A change of
// a few µs in the p50 added by the endpoint is below what one run of the
// endpoint scenario can tell on a shared machine; paired by repetition,
// the builds' difference is not (BENCHMARKS.md §6b, round five).
func CompareBuilds(ctx context.Context, cfg ABConfig) (*ABResult, error) {
	if len(cfg.Builds) == 0 || cfg.Reps < 1 || cfg.Calls < 1 || cfg.Payload < 1 {
		return nil, errors.New("compare builds: need at least one build, one repetition, one call and a payload")
	}
	dir, err := os.MkdirTemp("", "sbbench-ab-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	var up *sb.ServerConfig // the server the builds are in front of
	var sides []*abSide
	if cfg.HTTP {
		server, err := startHTTPServer(cfg.Testserver)
		if err != nil {
			return nil, fmt.Errorf("compare builds: %w", err)
		}
		defer server.stop()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		direct, err := connectAB(ctx, server.url, tr)
		if err != nil {
			return nil, fmt.Errorf("compare builds: connecting to %s: %w", server.url, err)
		}
		defer direct.Close()
		sides = append(sides, &abSide{ABSide: ABSide{Name: SideDirect}, cs: direct})
		up = &sb.ServerConfig{Name: endpointServer, Transport: sb.TransportStreamableHTTP, URL: server.url, ProtocolVersion: pinnedProtocol}
	} else {
		direct, pid, err := connectCommand(ctx, cfg.Testserver)
		if err != nil {
			return nil, fmt.Errorf("compare builds: starting %s: %w", cfg.Testserver, err)
		}
		defer closeCommand(direct, pid)
		sides = append(sides, &abSide{ABSide: ABSide{Name: SideDirectStdio}, cs: direct})
		up = &sb.ServerConfig{Name: endpointStdioServer, Transport: sb.TransportStdio, Command: cfg.Testserver, ProtocolVersion: pinnedProtocol}
	}
	for i, bin := range cfg.Builds {
		s, err := startABSide(ctx, bin, up, filepath.Join(dir, fmt.Sprintf("b%d.db", i)))
		if s != nil {
			defer s.stop()
		}
		if err != nil {
			return nil, err
		}
		sides = append(sides, s)
	}

	text := PayloadText(cfg.Payload)
	args := map[string]any{"text": text}
	lat := make([]time.Duration, cfg.Calls)
	for rep := range cfg.Reps {
		for i := range sides {
			s := sides[(i+rep)%len(sides)]
			echo := func(ctx context.Context) error {
				res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
				if err != nil {
					return err
				}
				return checkText(res, text)
			}
			measure(ctx, echo, cfg.Warmup, 1, lat)
			var cpu0 time.Duration
			if s.pid != 0 {
				cpu0 = procCPU(s.pid)
			}
			smp := measure(ctx, echo, cfg.Calls, 1, lat)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if smp.Errors > 0 {
				return nil, fmt.Errorf("compare builds: %s: %d of %d calls failed", s.Name, smp.Errors, smp.Calls)
			}
			s.P50, s.P99 = append(s.P50, smp.P50), append(s.P99, smp.P99)
			if s.pid != 0 {
				s.CPU = append(s.CPU, (procCPU(s.pid)-cpu0)/time.Duration(smp.Calls))
			}
			cfg.logf("ab rep %d/%d %-22s p50 %6.0fµs p99 %6.0fµs", rep+1, cfg.Reps, s.Name, micros(smp.P50), micros(smp.P99))
		}
	}
	res := &ABResult{Config: cfg, Direct: sides[0].ABSide}
	for _, s := range sides[1:] {
		res.Builds = append(res.Builds, s.ABSide)
	}
	return res, nil
}

// ABConfig sizes a comparison of builds.
type ABConfig struct {
	Testserver string
	// Builds are switchboard binaries (or scripts that exec one, to set
	// its environment), the first the baseline.
	Builds []string
	// Reps blocks of Calls sequential calls per side, each after Warmup
	// calls, with an echo text of Payload bytes.
	Reps, Calls, Warmup, Payload int
	// HTTP puts the builds in front of a testserver serving Streamable
	// HTTP, and compares them with a client calling it directly, instead
	// of stdio.
	HTTP bool
	Logf func(format string, args ...any)
}

func (c *ABConfig) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// ABSide is what one side measured, a value per repetition; CPU is the
// daemon's per call (none for the direct side).
type ABSide struct {
	Name          string
	P50, P99, CPU []time.Duration
}

// ABResult is a comparison of builds.
type ABResult struct {
	Config ABConfig
	Direct ABSide
	Builds []ABSide
}

type abSide struct {
	ABSide
	cs   *mcp.ClientSession
	pid  int
	stop func()
}

// connectAB connects a client to the MCP endpoint at url through rt.
func connectAB(ctx context.Context, url string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "bench-ab"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}},
			&mcp.ClientSessionOptions{ProtocolVersion: pinnedProtocol})
}

// startABSide starts a daemon of bin with the server up and connects a
// client to its /mcp/{name}.
func startABSide(ctx context.Context, bin string, up *sb.ServerConfig, db string) (*abSide, error) {
	d, err := startDaemon(ctx, bin, db)
	if err != nil {
		return nil, fmt.Errorf("compare builds: starting %s: %w", bin, err)
	}
	s := &abSide{ABSide: ABSide{Name: bin}, pid: d.PID, stop: d.kill}
	if _, err := d.api.CreateServer(ctx, up); err != nil {
		return s, err
	}
	if _, err := d.waitServerConnected(ctx, up.Name, 30*time.Second); err != nil {
		return s, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	s.cs, err = connectAB(ctx, d.MCPURL+"/"+up.Name, d.Transport(tr))
	if err != nil {
		return s, fmt.Errorf("compare builds: connecting to %s: %w", bin, err)
	}
	stopDaemon := s.stop
	s.stop = func() {
		s.cs.Close()
		tr.CloseIdleConnections()
		stopDaemon()
	}
	return s, nil
}

// Markdown reports the comparison: per build, the p50 and p99 added over
// the direct call and the daemon's CPU per call (medians over the
// repetitions, ranges), and each build's p50 against the first's, paired
// by repetition.
func (r *ABResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d repetitions of %d sequential calls per side (%s echo), after %d warm-up calls; the sides interleaved, their order rotating.\n\n",
		r.Config.Reps, r.Config.Calls, fmtPayload(r.Config.Payload), r.Config.Warmup)
	fmt.Fprintf(&b, "| build | p50 added over %s | p99 added | p50 against the first build, paired | CPU per call |\n|---|---:|---:|---:|---:|\n", r.Direct.Name)
	span := func(s Stat) string { return fmt.Sprintf("%+.0f µs (%+.0f … %+.0f)", s.Median, s.Min, s.Max) }
	for i, s := range r.Builds {
		paired := "–"
		if i > 0 {
			d := pairedDiff(s.P50, r.Builds[0].P50)
			faster := 0
			for _, v := range d {
				if v < 0 {
					faster++
				}
			}
			paired = fmt.Sprintf("%s; faster in %d of %d", span(Summarize(d)), faster, len(d))
		}
		cpu := Summarize(microsOf(s.CPU))
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f µs (%.0f … %.0f) |\n", s.Name, span(Summarize(pairedDiff(s.P50, r.Direct.P50))),
			span(Summarize(pairedDiff(s.P99, r.Direct.P99))), paired, cpu.Median, cpu.Min, cpu.Max)
	}
	fmt.Fprintf(&b, "\n%s p50: %.0f µs (median).\n", r.Direct.Name, Summarize(microsOf(r.Direct.P50)).Median)
	return b.String()
}

// pairedDiff is a[i] − b[i] in µs.
func pairedDiff(a, b []time.Duration) []float64 {
	d := make([]float64, min(len(a), len(b)))
	for i := range d {
		d[i] = micros(a[i] - b[i])
	}
	return d
}

func microsOf(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = micros(d)
	}
	return out
}
