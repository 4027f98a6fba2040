package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The endpoint scenario's goals (on loopback).
const (
	endpointAddedP50Goal = 300  // µs
	endpointAddedP99Goal = 1000 // µs
)

// Issue 13's goals: calls/s through the daemon fronting a stdio testserver
// over calls/s of the go-sdk's Streamable HTTP server answering directly.
var endpointWireSpeedGoals = []struct {
	side string
	goal float64
}{{SideGatewayOneStdio, 1.2}, {SideGatewayStdio, 1.1}}

// daemonShutdownGoal is serve's own bound on a SIGTERM shutdown.
const daemonShutdownGoal = 10 * time.Second

// endpointTargets judges the aggregated endpoint against the direct client,
// per payload and mode, on the median of the paired differences.
func (r *Report) endpointTargets() []Target {
	var out []Target
	for _, o := range r.Endpoint {
		row, ok := o.Row(SideGateway)
		if !ok {
			continue
		}
		direct, _ := o.Row(SideDirect)
		name := fmt.Sprintf("endpoint: %s, %s echo, %s", SideGateway, fmtPayload(o.Payload), o.Mode)
		out = append(out, addedTargets(name, " over direct go-sdk", row.AddedP50, row.AddedP99,
			direct, "direct", row, "through /mcp")...)
	}
	for _, o := range r.Endpoint {
		// Issue 13: the latency /mcp/{name} adds to a direct stdio call of
		// the same server, paired per repetition.
		one, okOne := o.Row(SideGatewayOneStdio)
		direct, okDirect := o.Row(SideDirectStdio)
		if !okOne || !okDirect {
			continue
		}
		p50, p99 := o.addedOver(SideGatewayOneStdio, SideDirectStdio)
		name := fmt.Sprintf("endpoint: %s over %s, %s echo, %s", SideGatewayOneStdio, SideDirectStdio, fmtPayload(o.Payload), o.Mode)
		out = append(out, addedTargets(name, "", p50, p99, direct, "direct stdio", one, "through /mcp/{name}")...)
	}
	for _, o := range r.Endpoint {
		direct, _ := o.Row(SideDirect)
		for _, g := range endpointWireSpeedGoals {
			row, ok := o.Row(g.side)
			if !ok {
				continue
			}
			out = append(out, Target{
				Name: fmt.Sprintf("calls/s, endpoint: %s ÷ direct go-sdk HTTP, %s echo, %s", g.side, fmtPayload(o.Payload), o.Mode),
				Goal: fmt.Sprintf("≥ %.1fx", g.goal),
				Measured: fmt.Sprintf("%s; %s vs %s calls/s", fmtStatFull(row.VsDirect, fmtRatio),
					fmtCount(row.CallsPerSec.Median), fmtCount(direct.CallsPerSec.Median)),
				Met: row.VsDirect.Median >= g.goal,
			})
		}
	}
	return out
}

// addedTargets judges the p50 and p99 (µs) a side adds over a base
// against the endpoint's goals; the measured lines give both sides'
// medians, as base and through name them.
func addedTargets(name, goalOver string, p50, p99 Stat, baseRow OverheadRow, base string, row OverheadRow, through string) []Target {
	return []Target{
		{
			Name: "added p50, " + name,
			Goal: fmt.Sprintf("≤ %s%s", fmtMillis(endpointAddedP50Goal/1000.0), goalOver),
			Measured: fmt.Sprintf("%s; p50 %s %s, %s %s", fmtStatFull(p50, fmtMicros),
				fmtMicros(baseRow.P50.Median), base, fmtMicros(row.P50.Median), through),
			Met: p50.Median <= endpointAddedP50Goal,
		},
		{
			Name: "added p99, " + name,
			Goal: fmt.Sprintf("≤ %s%s", fmtMillis(endpointAddedP99Goal/1000.0), goalOver),
			Measured: fmt.Sprintf("%s; p99 %s %s, %s %s", fmtStatFull(p99, fmtMicros),
				fmtMicros(baseRow.P99.Median), base, fmtMicros(row.P99.Median), through),
			Met: p99.Median <= endpointAddedP99Goal,
		},
	}
}

// addedOver is the p50 and p99 that side adds over base, in µs, paired per
// repetition.
func (r *OverheadResult) addedOver(side, base string) (p50, p99 Stat) {
	var d50, d99 []float64
	for i, s := range r.Samples[side] {
		d50 = append(d50, r.pair(base, i, func(b Sample) float64 { return micros(s.P50 - b.P50) }))
		d99 = append(d99, r.pair(base, i, func(b Sample) float64 { return micros(s.P99 - b.P99) }))
	}
	return Summarize(d50), Summarize(d99)
}

// daemonKinds are the kinds of the daemon-scale results present, in order,
// with their sizes.
func (r *Report) daemonKinds() []*DaemonResult {
	var out []*DaemonResult
	for _, kind := range []string{DaemonEmpty, ScaleStdio, ScaleHTTP} {
		for _, d := range r.Daemon {
			if d.Kind == kind {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// daemonOf returns the results of one kind, over every repetition (and
// run, when merged).
func (r *Report) daemonOf(kind string) []*DaemonResult {
	var out []*DaemonResult
	for _, d := range r.Daemon {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// daemonBaseline returns the daemon with no server of d's repetition.
func (r *Report) daemonBaseline(d *DaemonResult) *DaemonResult {
	for _, b := range r.Daemon {
		if b.Kind == DaemonEmpty && b.Run == d.Run && b.Rep == d.Rep {
			return b
		}
	}
	return nil
}

// perServer is f's growth from the empty daemon of the same repetition to
// d, divided by d's servers; NaN without a baseline or servers.
func (r *Report) perServer(d *DaemonResult, f func(*DaemonResult) float64) float64 {
	b := r.daemonBaseline(d)
	if b == nil || d.Servers == 0 {
		return math.NaN()
	}
	return (f(d) - f(b)) / float64(d.Servers)
}

// daemonStat summarises f over every repetition of kind.
func (r *Report) daemonStat(kind string, f func(*DaemonResult) float64) Stat {
	var xs []float64
	for _, d := range r.daemonOf(kind) {
		xs = append(xs, f(d))
	}
	return Summarize(xs)
}

// daemonGoal is issue 13's goal for a daemon of one kind: serve's
// resident memory per idle server and, if set, the time from exec until
// every server connected (serve's "every server started" line).
type daemonGoal struct {
	perServer float64       // bytes
	start     time.Duration // 0: all connected, no time set
}

var daemonGoals = map[string]daemonGoal{
	ScaleStdio: {perServer: 100 << 10, start: 5 * time.Second},
	ScaleHTTP:  {perServer: 64 << 10},
}

func (r *Report) daemonTargets() []Target {
	var out []Target
	for _, k := range r.daemonKinds() {
		if k.Kind == DaemonEmpty {
			continue
		}
		all := r.daemonOf(k.Kind)
		label := fmt.Sprintf("%d %s servers", k.Servers, k.Kind)
		allConnected, clean := true, true
		for _, d := range all {
			allConnected = allConnected && d.Connected == d.Servers
			clean = clean && d.ExitedBySelf && d.ExitCode == 0 && d.Left == 0 && d.ShutdownTime <= daemonShutdownGoal
		}
		rss := r.daemonStat(k.Kind, func(d *DaemonResult) float64 { return r.perServer(d, (*DaemonResult).RSSMedian) })
		anon := r.daemonStat(k.Kind, func(d *DaemonResult) float64 {
			return r.perServer(d, func(d *DaemonResult) float64 { return float64(d.RSSAnon) })
		})
		logged := r.daemonStat(k.Kind, func(d *DaemonResult) float64 { return millis(d.AllStarted) })
		polled := r.daemonStat(k.Kind, func(d *DaemonResult) float64 { return millis(d.PollConnected) })
		shutdown := r.daemonStat(k.Kind, func(d *DaemonResult) float64 { return millis(d.ShutdownTime) })
		left, exits := 0, 0
		for _, d := range all {
			left += d.Left
			if d.ExitedBySelf && d.ExitCode == 0 {
				exits++
			}
		}
		goal := daemonGoals[k.Kind]
		startGoal, startMet := "all connected (no time set)", allConnected
		if goal.start > 0 {
			startGoal = fmt.Sprintf("all connected within %s", goal.start)
			startMet = allConnected && logged.Median <= millis(goal.start)
		}
		out = append(out,
			Target{
				Name:     "daemon: serve start until every server connected, " + label,
				Goal:     startGoal,
				Measured: fmt.Sprintf("log line %s; first poll listing all %s", fmtStat(logged, fmtSeconds), fmtStat(polled, fmtSeconds)),
				Met:      startMet,
			},
			Target{
				Name: "daemon: resident memory per idle server, " + label,
				Goal: fmt.Sprintf("≤ %s (issue 13)", fmtBytes(goal.perServer)),
				Measured: fmt.Sprintf("%s (VmRSS of serve minus an empty serve's, per server); anonymous memory alone %s",
					fmtStat(rss, fmtBytes), fmtStat(anon, fmtBytes)),
				Met: rss.Median <= goal.perServer && allConnected,
			},
			Target{
				Name: "daemon: SIGTERM shutdown, " + label,
				Goal: fmt.Sprintf("exit 0 within %s (serve's grace), no server process left", daemonShutdownGoal),
				Measured: fmt.Sprintf("%s; exit 0 in %d of %d; testserver processes left: %d", fmtStat(shutdown, fmtMillis),
					exits, len(all), left),
				Met: clean,
			})
	}
	return out
}

// endpointMarkdown writes section 6.
func (r *Report) endpointMarkdown(b *strings.Builder) {
	if len(r.Endpoint) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	c := r.Config
	p("### 6. Endpoint overhead: a client through the daemon's `/mcp` against the same client direct\n\n")
	p("One testserver process serves Streamable HTTP on 127.0.0.1 (the go-sdk's `mcp.NewStreamableHTTPHandler` over the testserver's `mcp.Server`: *direct*, the \"direct go-sdk HTTP\" baseline of issue 13); a `switchboard serve` process (the built binary, `--listen 127.0.0.1:0`, SQLite) ")
	p("fronts that same process as a `streamable-http` server named `%s`, added with `POST /api/v1/servers`", endpointServer)
	if i := r.EndpointInfo; i != nil {
		p(" (its upstream session negotiated %s)", i.UpstreamProtocol)
	}
	p(", and a testserver child over stdio as `%s`; *%s* is a go-sdk client over `mcp.CommandTransport` to a testserver child of the harness", endpointStdioServer, SideDirectStdio)
	p(". Every side is a go-sdk client (`mcp.StreamableClientTransport`, protocol pinned to %s, its own connection pool of up to 64 idle connections) ", pinnedProtocol)
	p("calling the `echo` tool with a text of the given size (the answer carries it twice: as text and as structured content): ")
	p("*direct* at the testserver's `/mcp`, *%s* as `%s__echo`, *%s* as `echo` at `/mcp/%s`, *%s* as `%s__echo`, *%s* as `echo` at `/mcp/%s`. ",
		SideGateway, endpointServer, SideGatewayOne, endpointServer, SideGatewayStdio, endpointStdioServer, SideGatewayOneStdio, endpointStdioServer)
	p("*%s* is the floor of any gateway on this machine: `bench/cmd/floorrelay`, a process that writes each POST's body to a testserver child as a line and answers with the line that carries the same id, with no MCP logic at all (no session, no checks, no rewriting; its own process, one HTTP hop and one pipe hop, as the daemon's stdio sides). ", SideFloorRelay)
	p("\"vs direct\" is against *direct* (HTTP) for every side; the \"Switchboard\" CPU of the floor relay's side is the floor relay's. ")
	p("%d repetitions; per side and repetition %d sequential calls, or %d calls over %d callers, after %d warm-up calls; the sides interleaved, their order rotating. ",
		c.EndpointReps, c.Calls, c.ConcurrentCalls, c.Callers, c.Warmup)
	p("CPU per call is each process's CPU time over the block (`/proc/PID/task/*/schedstat`; the clients': `getrusage`) divided by the calls. " +
		"serve writes its audit log once a second: each block starts once the entries of the calls before it are written " +
		"(`switchboard_audit_queued` 0 in its `/metrics`), so that a block is charged the writes of its own calls that fall within it, never an earlier block's.\n\n")
	for _, o := range r.Endpoint {
		callers := "1 caller"
		if o.Callers > 1 {
			callers = fmt.Sprintf("%d callers", o.Callers)
		}
		p("#### %s echo, %s (%s)\n\n", fmtPayload(o.Payload), o.Mode, callers)
		p("| side | calls/s | p50 | p99 | vs direct (calls/s) | p50 added vs direct | p99 added vs direct | CPU/call: clients | Switchboard | testserver | errors |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range o.Rows() {
			vsDirect, added50, added99 := fmtStat(row.VsDirect, fmtRatio), fmtStat(row.AddedP50, fmtMicros), fmtStat(row.AddedP99, fmtMicros)
			if row.Side == SideDirect {
				vsDirect, added50, added99 = "1", "0", "0"
			}
			cpu := func(f func(Sample) time.Duration) string {
				var xs []float64
				for _, s := range o.Samples[row.Side] {
					xs = append(xs, micros(f(s)))
				}
				return fmtStat(Summarize(xs), fmtMicros)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", row.Side,
				fmtStat(row.CallsPerSec, fmtCount), fmtStat(row.P50, fmtMicros), fmtStat(row.P99, fmtMicros),
				vsDirect, added50, added99,
				cpu(func(s Sample) time.Duration { return s.ClientCPU }),
				cpu(func(s Sample) time.Duration { return s.DaemonCPU }),
				cpu(func(s Sample) time.Duration { return s.UpstreamCPU }), row.Errors)
		}
		p("\n")
	}
}

// daemonMarkdown writes section 7.
func (r *Report) daemonMarkdown(b *strings.Builder) {
	kinds := r.daemonKinds()
	if len(kinds) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	c := r.Config
	reps := len(r.daemonOf(kinds[0].Kind))
	p("### 7. The daemon with many servers: start-up, memory, shutdown\n\n")
	p("Each repetition (%d) starts three `switchboard serve` processes (the built binary, `--listen 127.0.0.1:0`, `--log-level info`, `GODEBUG=gctrace=1`), one after the other, ", reps)
	p("each on a fresh SQLite database filled beforehand with `store/sqlite`: no server; stdio servers (the testserver binary, a child each); ")
	p("`streamable-http` servers all pointing at one testserver process. Times are from the exec of serve: ")
	p("when the harness read serve's `every server started` log line (and the `elapsed=` serve logged in it, from its own start), ")
	p("when it read the last `upstream connected` line, and when a poll of `GET /api/v1/servers` (every %s, and at once after that log line) first listed every server connected. ", c.DaemonPollEvery)
	p("Then serve is left idle %s and its VmRSS (serve's process only; its children are other processes) is sampled %d times, %s apart; ", c.DaemonSettle, c.DaemonSamples, c.DaemonSampleEvery)
	p("the figure per server is the median minus the empty serve's median of the same repetition, divided by the servers. ")
	p("Last, SIGTERM: the time until serve was reaped, and a scan of `/proc` for processes of the testserver binary (zombies excluded; the HTTP testserver itself left out).\n\n")
	p("| median (range) over repetitions | ")
	for _, k := range kinds {
		if k.Kind == DaemonEmpty {
			p("no server | ")
			continue
		}
		p("%d × %s | ", k.Servers, k.Kind)
	}
	p("\n|---|%s\n", strings.Repeat("---:|", len(kinds)))
	row := func(name string, f func(kind string) string) {
		p("| %s |", name)
		for _, k := range kinds {
			p(" %s |", f(k.Kind))
		}
		p("\n")
	}
	stat := func(f func(*DaemonResult) float64, format func(float64) string) func(string) string {
		return func(kind string) string { return fmtStat(r.daemonStat(kind, f), format) }
	}
	perServer := func(f func(*DaemonResult) float64, format func(float64) string) func(string) string {
		return func(kind string) string {
			if kind == DaemonEmpty {
				return "–"
			}
			return fmtStat(r.daemonStat(kind, func(d *DaemonResult) float64 { return r.perServer(d, f) }), format)
		}
	}
	dur := func(f func(*DaemonResult) time.Duration) func(*DaemonResult) float64 {
		return func(d *DaemonResult) float64 { return millis(f(d)) }
	}
	u64 := func(f func(*DaemonResult) uint64) func(*DaemonResult) float64 {
		return func(d *DaemonResult) float64 { return float64(f(d)) }
	}
	row("connected (fewest in a repetition)", func(kind string) string {
		least, n := math.MaxInt, 0
		for _, d := range r.daemonOf(kind) {
			least, n = min(least, d.Connected), d.Servers
		}
		return fmt.Sprintf("%d of %d", least, n)
	})
	row("protocol", func(kind string) string {
		if v := r.daemonOf(kind)[0].Protocol; v != "" {
			return v
		}
		return "–"
	})
	row("API answering (`GET /healthz`)", stat(dur(func(d *DaemonResult) time.Duration { return d.APIUp }), fmtSeconds))
	row("`every server started` read", stat(dur(func(d *DaemonResult) time.Duration { return d.AllStarted }), fmtSeconds))
	row("… its `elapsed=` (serve's clock)", stat(dur(func(d *DaemonResult) time.Duration { return d.LoggedElapsed }), fmtSeconds))
	row("last `upstream connected` read", func(kind string) string {
		if kind == DaemonEmpty {
			return "–"
		}
		return stat(dur(func(d *DaemonResult) time.Duration { return d.LastConnected }), fmtSeconds)(kind)
	})
	row("first poll listing all connected", stat(dur(func(d *DaemonResult) time.Duration { return d.PollConnected }), fmtSeconds))
	row("polls", stat(func(d *DaemonResult) float64 { return float64(d.Polls) }, fmtCount))
	row("serve's VmRSS, idle", stat((*DaemonResult).RSSMedian, fmtBytes))
	row("**VmRSS per server**", func(kind string) string {
		if kind == DaemonEmpty {
			return "–"
		}
		return "**" + perServer((*DaemonResult).RSSMedian, fmtBytes)(kind) + "**"
	})
	row("serve's RssAnon, idle", stat(u64(func(d *DaemonResult) uint64 { return d.RSSAnon }), fmtBytes))
	row("RssAnon per server", perServer(u64(func(d *DaemonResult) uint64 { return d.RSSAnon }), fmtBytes))
	row("heap live at the last GC (gctrace, MB precision)", stat(u64(func(d *DaemonResult) uint64 { return d.HeapLive }), fmtBytes))
	row("… per server", perServer(u64(func(d *DaemonResult) uint64 { return d.HeapLive }), fmtBytes))
	row("… that GC at (since exec) / collections so far", func(kind string) string {
		at := r.daemonStat(kind, dur(func(d *DaemonResult) time.Duration { return d.GCAt }))
		n := r.daemonStat(kind, func(d *DaemonResult) float64 { return float64(d.GCs) })
		return fmtStat(at, fmtSeconds) + " / " + fmtStat(n, fmtCount)
	})
	row("goroutine stacks in use (/metrics)", stat(u64(func(d *DaemonResult) uint64 { return d.StackInuse }), fmtBytes))
	row("… per server", perServer(u64(func(d *DaemonResult) uint64 { return d.StackInuse }), fmtBytes))
	row("goroutines; per server", func(kind string) string {
		s := stat(func(d *DaemonResult) float64 { return float64(d.Goroutines) }, fmtCount)(kind)
		if kind == DaemonEmpty {
			return s
		}
		return s + "; " + perServer(func(d *DaemonResult) float64 { return float64(d.Goroutines) }, fmtFloat1)(kind)
	})
	row("threads", stat(func(d *DaemonResult) float64 { return float64(d.Threads) }, fmtCount))
	row("file descriptors", func(kind string) string {
		s := stat(func(d *DaemonResult) float64 { return float64(d.FDs) }, fmtCount)(kind)
		if kind == DaemonEmpty {
			return s
		}
		return s + "; per server " + perServer(func(d *DaemonResult) float64 { return float64(d.FDs) }, fmtFloat1)(kind)
	})
	row("servers' child processes (without the network helpers); all children's RSS (PSS)", func(kind string) string {
		n := r.daemonStat(kind, func(d *DaemonResult) float64 { return float64(d.Children) })
		rss := r.daemonStat(kind, u64(func(d *DaemonResult) uint64 { return d.ChildrenRSS }))
		pss := r.daemonStat(kind, u64(func(d *DaemonResult) uint64 { return d.ChildrenPSS }))
		if n.Median == 0 {
			return "0"
		}
		return fmt.Sprintf("%s; %s (%s)", fmtCount(n.Median), fmtBytes(rss.Median), fmtBytes(pss.Median))
	})
	row("the HTTP testserver's RSS", func(kind string) string {
		if kind != ScaleHTTP {
			return "–"
		}
		return stat(u64(func(d *DaemonResult) uint64 { return d.ServerRSS }), fmtBytes)(kind)
	})
	row("SIGTERM until reaped", stat(dur(func(d *DaemonResult) time.Duration { return d.ShutdownTime }), fmtMillis))
	row("… serve's log, `shutting down` → `stopped`", stat(dur(func(d *DaemonResult) time.Duration { return d.ShutdownLogged }), fmtMillis))
	row("exit status 0 / testserver processes left", func(kind string) string {
		all := r.daemonOf(kind)
		ok, left := 0, 0
		for _, d := range all {
			if d.ExitedBySelf && d.ExitCode == 0 {
				ok++
			}
			left += d.Left
		}
		return fmt.Sprintf("%d of %d / %d", ok, len(all), left)
	})
	p("\n")

	p("Per repetition:\n\n| run | rep | kind | connected | `every server started` (serve's `elapsed=`) | poll | VmRSS | per server | shutdown | left |\n")
	p("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range r.Daemon {
		per := "–"
		if d.Kind != DaemonEmpty {
			per = fmtBytes(r.perServer(d, (*DaemonResult).RSSMedian))
		}
		p("| %d | %d | %s | %d of %d | %s (%s) | %s | %s | %s | %s | %d |\n", max(1, d.Run), d.Rep, d.Kind, d.Connected, d.Servers,
			fmtSeconds(millis(d.AllStarted)), fmtSeconds(millis(d.LoggedElapsed)), fmtSeconds(millis(d.PollConnected)),
			fmtBytes(d.RSSMedian()), per, fmtMillis(millis(d.ShutdownTime)), d.Left)
	}
	p("\n")
	var problems []string
	for _, d := range r.Daemon {
		if d.FirstError != "" {
			problems = append(problems, fmt.Sprintf("- %s, rep %d: first server not connected: %s", d.Kind, d.Rep, d.FirstError))
		}
		for _, l := range d.Problems {
			problems = append(problems, fmt.Sprintf("- %s, rep %d: `%s`", d.Kind, d.Rep, l))
		}
	}
	if len(problems) > 0 {
		p("Warnings and errors the daemons logged (the first %d of each):\n\n%s\n\n", maxProblems, strings.Join(problems, "\n"))
	}
}

// fmtPayload prints a payload size: whole KiB as such.
func fmtPayload(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmtCount(float64(n)) + " B"
}

// fmtSeconds prints milliseconds given as float64 in seconds.
func fmtSeconds(ms float64) string {
	if math.IsNaN(ms) {
		return "–"
	}
	if math.Abs(ms) < 1000 {
		return fmtMillis(ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}
