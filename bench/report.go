package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Target is one goal of the benchmark issue and whether the run met it.
type Target struct {
	Name     string `json:"name"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// Targets judges the run against the goals. Each is judged on the
// median over the repetitions (or iterations); the spread is printed with
// it.
func (r *Report) Targets() []Target {
	var out []Target
	for _, o := range r.Overhead {
		for _, name := range []string{SideSession, SideExecutor} {
			row, ok := o.Row(name)
			if !ok {
				continue
			}
			out = append(out, Target{
				Name:     fmt.Sprintf("throughput, %s, %s, %s", name, o.Transport, o.Mode),
				Goal:     "≥ 0.90x direct go-sdk",
				Measured: fmtStatFull(row.VsDirect, fmtRatio),
				Met:      row.VsDirect.Median >= 0.9,
			})
		}
	}
	for _, o := range r.Overhead {
		if o.Transport != InMemory {
			continue
		}
		for _, name := range []string{SideSession, SideExecutor} {
			row, ok := o.Row(name)
			if !ok {
				continue
			}
			out = append(out, Target{
				Name:     fmt.Sprintf("added p99, %s, in-memory, %s", name, o.Mode),
				Goal:     "≤ 50 µs over direct go-sdk",
				Measured: fmtStatFull(row.AddedP99, fmtMicros) + "; p50 added " + fmtStat(row.AddedP50, fmtMicros),
				Met:      row.AddedP99.Median <= 50,
			})
		}
	}
	if rc := r.Recovery; rc != nil && rc.Iterations > 0 {
		detect, fail := durStat(rc.Detect), durStat(rc.CallFail)
		reconnect, base := durStat(rc.Reconnect), durStat(rc.Baseline)
		out = append(out,
			Target{Name: "kill -9: drop noticed (OnEvent \"dropped\")", Goal: "≤ 10 ms",
				Measured: recoveryText(detect), Met: detect.Median <= 10},
			Target{Name: "kill -9: call in flight fails", Goal: "≤ 10 ms",
				Measured: recoveryText(fail), Met: fail.Median <= 10},
			Target{Name: "kill -9: connected again", Goal: "≤ fresh spawn+initialize + 20 ms",
				Measured: fmt.Sprintf("%s; baseline median %s, so +%s", recoveryText(reconnect), fmtMillis(base.Median),
					fmtMillis(reconnect.Median-base.Median)),
				Met: reconnect.Median-base.Median <= 20},
		)
	}
	for _, s := range r.Slow {
		if s.Side != SideExecutor {
			continue
		}
		st := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return run.Throughput() / s.Ceiling() }))
		measured := fmtStatFull(st, fmtPercent)
		if d := r.slowDirect(s.Transport); d != nil {
			dt := Summarize(mapRuns(d.Runs, func(run SlowRun) float64 { return run.Throughput() / d.Ceiling() }))
			measured += "; direct go-sdk in the same run " + fmtStat(dt, fmtPercent)
		}
		out = append(out, Target{
			Name:     fmt.Sprintf("slow tools, %d callers × %s, %s, %s", s.Callers, s.Delay, s.Side, s.Transport),
			Goal:     fmt.Sprintf("≥ 95%% of %.0f calls/s", s.Ceiling()),
			Measured: measured,
			Met:      st.Median >= 0.95,
		})
	}
	for _, sc := range r.Scale {
		per := sc.PerSession(func(m MemSnap) float64 { return float64(m.RSS) })
		out = append(out, Target{
			Name:     fmt.Sprintf("resident memory per idle session, %d %s sessions%s", sc.Sessions, sc.Kind, sc.runLabel()),
			Goal:     "≤ 100 KB (100,000 B)",
			Measured: fmtBytes(per),
			Met:      per <= 100_000 && sc.Connected == sc.Sessions,
		})
	}
	out = append(out, r.endpointTargets()...)
	return append(out, r.daemonTargets()...)
}

func durStat(ds []time.Duration) Stat {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = millis(d)
	}
	return Summarize(xs)
}

func recoveryText(s Stat) string {
	return fmt.Sprintf("median %s, p90 %s, max %s", fmtMillis(s.Median), fmtMillis(s.P90), fmtMillis(s.Max))
}

func mapRuns(runs []SlowRun, f func(SlowRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// Markdown renders the report: the environment, the targets, then every
// scenario's table.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := r.Config
	e := r.Env

	p("### Machine and run\n\n")
	p("| | |\n|---|---|\n")
	p("| date | %s |\n", e.Date.Format("2006-01-02 15:04 MST"))
	p("| CPU | %s; nproc %d, GOMAXPROCS %d |\n", e.CPUModel, e.CPUs, e.GOMAXPROCS)
	p("| memory | %s |\n", e.MemTotal)
	p("| kernel | %s |\n", e.Kernel)
	p("| Go | %s; go-sdk %s |\n", e.GoVersion, e.SDKVersion)
	p("| commit | %s |\n", e.Commit)
	if len(e.Modified) > 0 {
		p("| uncommitted changes in | %s |\n", strings.Join(e.Modified, ", "))
	}
	p("| RLIMIT_NOFILE | %s |\n", e.NoFile)
	p("| run time | %s |\n", r.Elapsed.Round(time.Second))
	if len(r.Runs) > 0 {
		for i, run := range r.Runs {
			var ls []string
			for _, l := range run.Load {
				ls = append(ls, fmt.Sprintf("%s %.1f → %.1f", l.Scenario, l.Before, l.After))
			}
			load := ""
			if len(ls) > 0 {
				load = "; load " + strings.Join(ls, ", ")
			}
			p("| pooled run %d | %s, commit %s%s |\n", i+1, run.Date, run.Commit, load)
		}
	}
	if len(r.Load) > 0 {
		var ls []string
		for _, l := range r.Load {
			ls = append(ls, fmt.Sprintf("%s %.1f → %.1f", l.Scenario, l.Before, l.After))
		}
		p("| load average (1 min), before → after each scenario | %s |\n", strings.Join(ls, "; "))
	}
	p("\n")
	p("Every figure is the median over the repetitions, with the interquartile range (p25–p75) in parentheses, or the range (min–max) when there are fewer than 4 repetitions; the targets table gives both. ")
	p("Ratios are paired: each repetition's figure is divided by the other side's figure from the same repetition, ")
	p("taken moments apart (the sides are interleaved and their order rotates from one repetition to the next).\n\n")

	p("### Targets\n\n| target | goal | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		met := "**not met**"
		if t.Met {
			met = "met"
		}
		p("| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Measured, met)
	}
	p("\n")

	if len(r.Overhead) > 0 {
		p("### 1. Library overhead (echo tool, `{\"text\":\"hello\"}`, protocol %s)\n\n", pinnedProtocol)
		p("%d repetitions; per side and repetition %d sequential calls, or %d calls spread over %d concurrent callers; %d warm-up calls before each block. ",
			c.Reps, c.Calls, c.ConcurrentCalls, c.Callers, c.Warmup)
		p("Allocations are `runtime.MemStats` deltas over the block divided by the calls: **in memory they include the in-process server's allocations** ")
		p("(client and server share the process); **over stdio they are the client process's only** (the server is a child). ")
		p("The floor is hand-written newline-delimited JSON-RPC with `encoding/json` and no SDK: over `io.Pipe` in memory, and over stdio as a child process (this harness's own binary, re-executed).\n\n")
		for _, o := range r.Overhead {
			callers := "1 caller"
			if o.Callers > 1 {
				callers = fmt.Sprintf("%d callers", o.Callers)
			}
			p("#### %s, %s (%s)\n\n", o.Transport, o.Mode, callers)
			p("| side | calls/s | p50 | p99 | allocs/call | B/call | vs direct (calls/s) | vs floor (calls/s) | p50 added vs direct | p99 added vs direct | errors |\n")
			p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, row := range o.Rows() {
				vsDirect, added50, added := fmtStat(row.VsDirect, fmtRatio), fmtStat(row.AddedP50, fmtMicros), fmtStat(row.AddedP99, fmtMicros)
				if row.Side == SideDirect {
					vsDirect, added50, added = "1", "0", "0"
				}
				vsFloor := fmtStat(row.VsFloor, fmtRatio)
				if row.Side == SideFloor {
					vsFloor = "1"
				}
				p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", row.Side,
					fmtStat(row.CallsPerSec, fmtCount), fmtStat(row.P50, fmtMicros), fmtStat(row.P99, fmtMicros),
					fmtStat(row.Allocs, fmtCount), fmtStat(row.Bytes, fmtBytes), vsDirect, vsFloor, added50, added, row.Errors)
			}
			p("\n")
		}
	}

	if len(r.Profiles) > 0 {
		p("### 2. Where the allocations go\n\n")
		p("Allocation profiles (`runtime.MemProfile`, the data behind pprof's `allocs` profile) at `MemProfileRate = 1`, so every allocation is recorded: ")
		p("the difference between snapshots around %d sequential calls per side, after %d warm-up calls. ", c.ProfileCalls, c.Warmup)
		p("An allocation is charged to the innermost frame outside the standard library, except that everything under the SDK's `internal/json.Unmarshal` ")
		p("(a new `segmentio` decoder with a 32 KiB buffer per message) is charged to it. In memory the server's allocations are included; over stdio the client's only.")
		if len(r.Runs) > 0 {
			p(" The profiles are the last pooled run's (they count allocations, which do not vary from run to run).")
		}
		p("\n\n")
		for _, transport := range []string{InMemory, Stdio} {
			profs := r.profilesFor(transport)
			if len(profs) == 0 {
				continue
			}
			p("#### %s: by owner (bytes per call, share of the side's bytes)\n\n", transport)
			owners := []string{OwnerSDKUnmarshal, OwnerSDK, OwnerSwitchboard, OwnerTestserver, OwnerHarness, OwnerStdlib}
			p("| side | total B/call | allocs/call |")
			for _, o := range owners {
				p(" %s |", o)
			}
			p("\n|---|---:|---:|%s\n", strings.Repeat("---:|", len(owners)))
			for _, pr := range profs {
				p("| %s | %s | %s |", pr.Side, fmtBytes(pr.BytesPerCall), fmtCount(pr.AllocsPerCall))
				for _, o := range owners {
					s := pr.Owner(o)
					if math.Abs(s.Bytes) < 0.5 {
						p(" – |")
						continue
					}
					p(" %s (%s) |", fmtBytes(s.Bytes), fmtPercent(s.Share))
				}
				p("\n")
			}
			p("\n")
			r.gapText(&b, transport)
			for _, pr := range profs {
				if pr.Side == SideFloor {
					continue
				}
				p("Top allocation sites, %s, %s:\n\n| site (innermost non-runtime frame ← innermost non-stdlib frame) | B/call | allocs/call | share |\n|---|---:|---:|---:|\n", transport, pr.Side)
				for _, s := range pr.Sites {
					p("| `%s` | %s | %s | %s |\n", s.Name, fmtBytes(s.Bytes), fmtFloat1(s.Allocs), fmtPercent(s.Share))
				}
				p("\n")
				if len(pr.OwnSites) > 0 {
					p("Switchboard's own top sites, %s, %s:\n\n| site | B/call | allocs/call | share |\n|---|---:|---:|---:|\n", transport, pr.Side)
					for _, s := range pr.OwnSites {
						p("| `%s` | %s | %s | %s |\n", s.Name, fmtBytes(s.Bytes), fmtFloat1(s.Allocs), fmtPercent(s.Share))
					}
					p("\n")
				}
			}
		}
	}

	if rc := r.Recovery; rc != nil {
		p("### 3. Recovery from kill -9 (stdio)\n\n")
		p("%d iterations (%d completed). Each: a fresh go-sdk client connects to a fresh process of the testserver (the baseline); ", c.RecoveryIters, rc.Iterations)
		p("then, on Switchboard's session, a `sleep` call of 30 s is started, and once the server has logged it the server process gets SIGKILL. ")
		p("Times are from the kill. The session's `FlapWindow` is 1 ns: by default a drop within 10 s of a transparent reconnect counts as flapping and waits 2 s, which back-to-back kills would hit every time.\n\n")
		p("| measure | median | p90 | max | n |\n|---|---:|---:|---:|---:|\n")
		for _, m := range []struct {
			name string
			ds   []time.Duration
		}{
			{"drop noticed (OnEvent \"dropped\")", rc.Detect},
			{"call in flight failed", rc.CallFail},
			{"connected again (OnEvent \"connected\"; spawn + initialize + discovery)", rc.Reconnect},
			{"baseline: fresh go-sdk client, spawn + initialize", rc.Baseline},
			{"baseline + list tools, resources, templates, prompts", rc.BaselineList},
		} {
			s := durStat(m.ds)
			p("| %s | %s | %s | %s | %d |\n", m.name, fmtMillis(s.Median), fmtMillis(s.P90), fmtMillis(s.Max), s.N)
		}
		p("\nThe in-flight call's error: ")
		var kinds []string
		for k, n := range rc.CallErrors {
			kinds = append(kinds, fmt.Sprintf("%s × %d", k, n))
		}
		p("%s.", strings.Join(kinds, ", "))
		if len(rc.Failures) > 0 {
			p(" Incomplete iterations: %s.", strings.Join(rc.Failures, "; "))
		}
		p("\n\n")
	}

	if len(r.Slow) > 0 {
		s0 := r.Slow[0]
		p("### 4. Slow tools: %d callers, a tool that sleeps %s, for %s\n\n", s0.Callers, s0.Delay, s0.Duration)
		p("Little's-law ceiling: %d / %s = %.0f calls/s. %d repetition(s), sides interleaved. Throughput = calls completed / time until the last caller finished. ",
			s0.Callers, s0.Delay, s0.Ceiling(), c.SlowReps)
		p("Goroutines and heap in use are this process's, sampled every 50 ms (peak shown; in memory they include the server's).\n\n")
		p("| transport | side | calls/s | of ceiling | vs direct go-sdk (paired) | errors | goroutines before → peak | heap in use before → peak |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Slow {
			tp := Summarize(mapRuns(s.Runs, SlowRun.Throughput))
			vs := "1"
			if d := r.slowDirect(s.Transport); d != nil && d != s {
				var ratios []float64
				for i, run := range s.Runs {
					if i < len(d.Runs) {
						ratios = append(ratios, run.Throughput()/d.Runs[i].Throughput())
					}
				}
				vs = fmtStat(Summarize(ratios), fmtRatio)
			}
			frac := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return run.Throughput() / s.Ceiling() }))
			errs := 0
			for _, run := range s.Runs {
				errs += run.Errors
			}
			g0 := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return float64(run.BaseGoroutines) }))
			g1 := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return float64(run.PeakGoroutines) }))
			h0 := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return float64(run.BaseHeap) }))
			h1 := Summarize(mapRuns(s.Runs, func(run SlowRun) float64 { return float64(run.PeakHeap) }))
			p("| %s | %s | %s | %s | %s | %d | %s → %s | %s → %s |\n", s.Transport, s.Side,
				fmtStat(tp, fmtFloat1), fmtStat(frac, fmtPercent), vs, errs,
				fmtCount(g0.Median), fmtCount(g1.Median), fmtBytes(h0.Median), fmtBytes(h1.Median))
		}
		p("\n")
	}

	if len(r.Scale) > 0 {
		p("### 5. Many idle sessions\n\n")
		p("Sessions are created with `upstream.New` and started %d at a time; the time is from the first `Start` until every `Start` returned. ", c.StartConcurrency)
		p("Memory is this process's (the driver's; the servers are other processes), after `debug.FreeOSMemory`, before `New` and with every session connected and idle; ")
		p("the growth is divided by the number of sessions. The servers' own memory is shown apart (stdio: summed over the children; HTTP: the one server process).\n\n")
		p("| | ")
		for _, sc := range r.Scale {
			p("%d × %s%s | ", sc.Sessions, sc.Kind, sc.runLabel())
		}
		p("\n|---|%s\n", strings.Repeat("---:|", len(r.Scale)))
		row := func(name string, f func(sc *ScaleResult) string) {
			p("| %s |", name)
			for _, sc := range r.Scale {
				p(" %s |", f(sc))
			}
			p("\n")
		}
		per := func(sc *ScaleResult, f func(MemSnap) float64) float64 { return sc.PerSession(f) }
		row("connected", func(sc *ScaleResult) string { return fmt.Sprintf("%d of %d", sc.Connected, sc.Sessions) })
		row("protocol", func(sc *ScaleResult) string { return sc.Protocol })
		row("time until all connected", func(sc *ScaleResult) string { return fmtMillis(millis(sc.ConnectTime)) })
		row("baseline: plain go-sdk clients, same work, same concurrency", func(sc *ScaleResult) string {
			return fmt.Sprintf("%s (%d of %d); Switchboard took %s as long", fmtMillis(millis(sc.BaselineConnectTime)),
				sc.BaselineConnected, sc.Sessions, fmtRatio(sc.ConnectTime.Seconds()/sc.BaselineConnectTime.Seconds()))
		})
		row("RSS before → idle", func(sc *ScaleResult) string {
			return fmtBytes(float64(sc.Before.RSS)) + " → " + fmtBytes(float64(sc.After.RSS))
		})
		row("**RSS per session**", func(sc *ScaleResult) string {
			return "**" + fmtBytes(per(sc, func(m MemSnap) float64 { return float64(m.RSS) })) + "**"
		})
		row("heap in use per session", func(sc *ScaleResult) string {
			return fmtBytes(per(sc, func(m MemSnap) float64 { return float64(m.HeapInuse) }))
		})
		row("goroutine stacks per session", func(sc *ScaleResult) string {
			return fmtBytes(per(sc, func(m MemSnap) float64 { return float64(m.StackInuse) }))
		})
		row("goroutines per session", func(sc *ScaleResult) string {
			return fmtFloat1(per(sc, func(m MemSnap) float64 { return float64(m.Goroutines) }))
		})
		row("file descriptors per session", func(sc *ScaleResult) string {
			return fmtFloat1(per(sc, func(m MemSnap) float64 { return float64(m.FDs) }))
		})
		row("servers' RSS (PSS)", func(sc *ScaleResult) string {
			return fmt.Sprintf("%s (%s)", fmtBytes(float64(sc.ServerRSS)), fmtBytes(float64(sc.ServerPSS)))
		})
		row("shutdown of all (64 at a time)", func(sc *ScaleResult) string { return fmtMillis(millis(sc.ShutdownTime)) })
		row("after shutdown: goroutines, fds (before: see above)", func(sc *ScaleResult) string {
			return fmt.Sprintf("%d, %d (before %d, %d)", sc.Closed.Goroutines, sc.Closed.FDs, sc.Before.Goroutines, sc.Before.FDs)
		})
		row("child processes left / process groups left", func(sc *ScaleResult) string {
			return fmt.Sprintf("%d / %d", sc.ChildrenLeft, sc.GroupsLeft)
		})
		for _, sc := range r.Scale {
			if sc.FirstError != "" {
				p("\nFirst failure (%s): %s\n", sc.Kind, sc.FirstError)
			}
		}
		p("\n")
		for _, sc := range r.Scale {
			pr := sc.Profile
			if pr == nil {
				continue
			}
			p("#### What an idle %s session keeps (profile of %d more sessions%s)\n\n", sc.Kind, pr.Sessions, sc.runLabel())
			p("Heap in use per session: %s in %s objects (memory profile at `MemProfileRate = 1`, in-use bytes after minus before, charged as in section 2).\n\n",
				fmtBytes(pr.HeapBytes), fmtFloat1(pr.HeapObjects))
			p("| owner | in use per session | objects | share |\n|---|---:|---:|---:|\n")
			for _, o := range pr.Owners {
				p("| %s | %s | %s | %s |\n", o.Name, fmtBytes(o.Bytes), fmtFloat1(o.Allocs), fmtPercent(o.Share))
			}
			p("\n| top sites (innermost non-runtime frame ← innermost non-stdlib frame) | in use per session | objects | share |\n|---|---:|---:|---:|\n")
			for _, o := range pr.Sites {
				p("| `%s` | %s | %s | %s |\n", o.Name, fmtBytes(o.Bytes), fmtFloat1(o.Allocs), fmtPercent(o.Share))
			}
			p("\n| goroutine running | per session |\n|---|---:|\n")
			for _, g := range pr.Goroutines {
				p("| `%s` | %s |\n", g.Func, fmtFloat1(g.PerSession))
			}
			p("\n")
		}
	}
	r.endpointMarkdown(&b)
	r.daemonMarkdown(&b)
	return b.String()
}

// runLabel names the run of a merged report a result comes from.
func (sc *ScaleResult) runLabel() string {
	if sc.Run == 0 {
		return ""
	}
	return fmt.Sprintf(" (run %d)", sc.Run)
}

// slowDirect returns the direct go-sdk's slow-tool result over transport.
func (r *Report) slowDirect(transport string) *SlowResult {
	for _, s := range r.Slow {
		if s.Transport == transport && s.Side == SideDirect {
			return s
		}
	}
	return nil
}

// profilesFor returns the profiles of one transport, in side order.
func (r *Report) profilesFor(transport string) []*AllocProfile {
	var out []*AllocProfile
	for _, side := range allSides {
		for _, p := range r.Profiles {
			if p.Transport == transport && p.Side == side {
				out = append(out, p)
			}
		}
	}
	return out
}

func (r *Report) profile(transport, side string) *AllocProfile {
	for _, p := range r.Profiles {
		if p.Transport == transport && p.Side == side {
			return p
		}
	}
	return nil
}

// gapText explains the byte gaps floor → direct → Session from the
// profiles of one transport.
func (r *Report) gapText(b *strings.Builder, transport string) {
	floor, direct, sess := r.profile(transport, SideFloor), r.profile(transport, SideDirect), r.profile(transport, SideSession)
	if floor == nil || direct == nil || sess == nil {
		return
	}
	gap := direct.BytesPerCall - floor.BytesPerCall
	dec := direct.Owner(OwnerSDKUnmarshal).Bytes
	fmt.Fprintf(b, "- direct go-sdk − floor: %s per call (%s vs %s); the SDK's `internal/json.Unmarshal` accounts for %s of it (%s of the gap).\n",
		fmtBytes(gap), fmtBytes(direct.BytesPerCall), fmtBytes(floor.BytesPerCall), fmtBytes(dec), fmtPercent(dec/gap))
	extra := sess.BytesPerCall - direct.BytesPerCall
	sw := sess.Owner(OwnerSwitchboard)
	decDiff := sess.Owner(OwnerSDKUnmarshal).Bytes - dec
	same := "the same as on the direct path"
	if math.Abs(decDiff) >= 16 {
		same = fmtBytes(decDiff) + " more than on the direct path"
	}
	fmt.Fprintf(b, "- Session.CallTool − direct go-sdk: %s and %s allocations per call; Switchboard's own frames allocate %s (%s allocations); "+
		"the SDK's `internal/json.Unmarshal` %s.\n\n",
		fmtBytes(extra), fmtFloat1(sess.AllocsPerCall-direct.AllocsPerCall), fmtBytes(sw.Bytes), fmtFloat1(sw.Allocs), same)
}

func fmtFloat1(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	if math.Abs(x) >= 1000 {
		return fmtCount(x)
	}
	return fmt.Sprintf("%.1f", x)
}
