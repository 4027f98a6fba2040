package bench

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

func TestMain(m *testing.M) {
	MaybeRunChild() // the stdio floor server is this test binary, re-executed
	code := m.Run()
	testserver.RemoveBinary()
	os.Exit(code)
}

// testLog is an io.Writer that passes each progress line to t.Log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runContext bounds a harness run by the test binary's own deadline (go
// test -timeout), less half a minute to report, not by a wall-clock guess:
// on a loaded machine even the quick run takes minutes.
func runContext(t *testing.T) context.Context {
	d, ok := t.Deadline()
	if !ok {
		return t.Context()
	}
	ctx, cancel := context.WithDeadline(t.Context(), d.Add(-30*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// TestHarnessQuick runs every scenario of the harness in a tiny
// configuration and checks that each one produced figures, that every call
// succeeded and that nothing was left running. It asserts nothing about
// how fast anything was.
func TestHarnessQuick(t *testing.T) {
	cfg := QuickConfig(testserver.Binary(t))
	cfg.Calls, cfg.ConcurrentCalls, cfg.Warmup, cfg.ProfileCalls = 32, 32, 8, 16
	sbBin, sbDir, err := BuildSwitchboard()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sbDir)
	cfg.Switchboard = sbBin
	cfg.Log = testLog{t}
	rep, err := Run(runContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}

	if got := len(rep.Overhead); got != 4 {
		t.Errorf("overhead: %d results, want 4 (2 transports × 2 modes)", got)
	}
	for _, o := range rep.Overhead {
		for _, side := range allSides {
			ss := o.Samples[side]
			if len(ss) != cfg.Reps {
				t.Errorf("overhead %s %s %s: %d samples, want %d", o.Transport, o.Mode, side, len(ss), cfg.Reps)
			}
			for _, s := range ss {
				if s.Calls == 0 || s.Errors != 0 || !finitePositive(s.CallsPerSec()) || s.P99 <= 0 || s.BytesPerCall <= 0 {
					t.Errorf("overhead %s %s %s: sample without figures or with errors: %+v", o.Transport, o.Mode, side, s)
				}
			}
		}
		if row, ok := o.Row(SideSession); !ok || math.IsNaN(row.VsDirect.Median) || math.IsNaN(row.VsFloor.Median) {
			t.Errorf("overhead %s %s: no ratios for %s: %+v", o.Transport, o.Mode, SideSession, row)
		}
	}
	if got := len(rep.Profiles); got != 8 {
		t.Errorf("alloc profiles: %d, want 8 (2 transports × 4 sides)", got)
	}
	for _, p := range rep.Profiles {
		if p.BytesPerCall <= 0 || len(p.Owners) == 0 || len(p.Sites) == 0 {
			t.Errorf("alloc profile %s %s is empty: %+v", p.Transport, p.Side, p)
		}
		if p.Side == SideDirect && p.Owner(OwnerSDKUnmarshal).Bytes <= 0 {
			t.Errorf("alloc profile %s %s charges nothing to the SDK's internal/json.Unmarshal: %+v", p.Transport, p.Side, p.Owners)
		}
	}

	rc := rep.Recovery
	switch {
	case rc == nil:
		t.Error("recovery: no result")
	case rc.Iterations != cfg.RecoveryIters || len(rc.Detect) != rc.Iterations || len(rc.Reconnect) != rc.Iterations ||
		len(rc.CallFail) != rc.Iterations || len(rc.Baseline) != cfg.RecoveryIters:
		t.Errorf("recovery: incomplete: %+v", rc)
	case rc.CallErrors["ErrConnectionLost"] != rc.Iterations:
		t.Errorf("recovery: the in-flight call failed with %v, want ErrConnectionLost every time", rc.CallErrors)
	}

	if got := len(rep.Slow); got != 4 {
		t.Errorf("slow tools: %d results, want 4 (2 transports × 2 sides)", got)
	}
	for _, s := range rep.Slow {
		if len(s.Runs) != cfg.SlowReps {
			t.Errorf("slow tools %s %s: %d runs, want %d", s.Transport, s.Side, len(s.Runs), cfg.SlowReps)
		}
		for _, run := range s.Runs {
			if run.Calls == 0 || run.Errors != 0 || run.PeakGoroutines == 0 || run.PeakHeap == 0 {
				t.Errorf("slow tools %s %s: run without figures or with errors: %+v", s.Transport, s.Side, run)
			}
		}
	}

	if got := len(rep.Scale); got != 2 {
		t.Errorf("scale: %d results, want 2 (stdio, streamable-http)", got)
	}
	for _, sc := range rep.Scale {
		if sc.Connected != sc.Sessions || sc.After.RSS == 0 || sc.ConnectTime <= 0 {
			t.Errorf("scale %s: %d of %d connected (%s), RSS %d", sc.Kind, sc.Connected, sc.Sessions, sc.FirstError, sc.After.RSS)
		}
		if sc.ChildrenLeft != 0 || sc.GroupsLeft != 0 {
			t.Errorf("scale %s: %d child processes and %d process groups left after shutdown", sc.Kind, sc.ChildrenLeft, sc.GroupsLeft)
		}
	}
	checkEndpoint(t, &cfg, rep)
	checkDaemon(t, &cfg, rep)
	if left := childPIDs(); len(left) > 0 {
		t.Errorf("child processes left after the run: %v", left)
	}
	if left := procsRunning(cfg.Testserver); len(left) > 0 {
		t.Errorf("testserver processes left after the run: %v", left)
	}

	if len(rep.Targets()) == 0 {
		t.Error("no targets judged")
	}
	md := rep.Markdown()
	for _, want := range []string{"### Targets", "### 1. Library overhead", "### 2. Where the allocations go",
		"### 3. Recovery", "### 4. Slow tools", "### 5. Many idle sessions", "### 6. Endpoint overhead", "### 7. The daemon"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// checkEndpoint checks that the endpoint scenario measured every side,
// payload and mode, without errors, the daemon working on the Switchboard
// sides only.
func checkEndpoint(t *testing.T, cfg *Config, rep *Report) {
	t.Helper()
	if got, want := len(rep.Endpoint), 2*len(cfg.EndpointPayloads); got != want {
		t.Errorf("endpoint: %d results, want %d (2 modes × %d payloads)", got, want, len(cfg.EndpointPayloads))
	}
	if rep.EndpointInfo == nil || rep.EndpointInfo.UpstreamProtocol != pinnedProtocol {
		t.Errorf("endpoint: upstream session info %+v, want protocol %s", rep.EndpointInfo, pinnedProtocol)
	}
	var logged []string // what the daemon warned of, to tell a failure's cause
	if rep.EndpointInfo != nil {
		logged = rep.EndpointInfo.Problems
	}
	for _, o := range rep.Endpoint {
		for _, side := range endpointSides {
			ss := o.Samples[side]
			if len(ss) != cfg.EndpointReps {
				t.Errorf("endpoint %d B %s %s: %d samples, want %d", o.Payload, o.Mode, side, len(ss), cfg.EndpointReps)
			}
			for _, s := range ss {
				if s.Calls == 0 || s.Errors != 0 || !finitePositive(s.CallsPerSec()) || s.P99 <= 0 || s.UpstreamCPU <= 0 {
					t.Errorf("endpoint %d B %s %s: sample without figures or with errors: %+v; the daemon logged %q", o.Payload, o.Mode, side, s, logged)
				}
				// Direct, the daemon only idles; through it, it works.
				if through := !endpointDirect(side); through != (s.DaemonCPU > s.UpstreamCPU/10) {
					t.Errorf("endpoint %d B %s %s: the daemon's CPU per call is %s (the testserver's %s); p99 %s; the daemon logged %q",
						o.Payload, o.Mode, side, s.DaemonCPU, s.UpstreamCPU, s.P99, logged)
				}
			}
		}
		for _, side := range []string{SideGateway, SideGatewayOneStdio, SideGatewayStdio} {
			if row, ok := o.Row(side); !ok || math.IsNaN(row.AddedP50.Median) || math.IsNaN(row.VsDirect.Median) {
				t.Errorf("endpoint %d B %s: no paired figures for %s: %+v", o.Payload, o.Mode, side, row)
			}
		}
	}
}

// checkDaemon checks that every daemon of the daemon-scale scenario
// connected all its servers, was measured, exited 0 on SIGTERM and left no
// server process behind.
func checkDaemon(t *testing.T, cfg *Config, rep *Report) {
	t.Helper()
	if got, want := len(rep.Daemon), 3*cfg.DaemonReps; got != want {
		t.Errorf("daemon-scale: %d results, want %d (3 kinds × %d repetitions)", got, want, cfg.DaemonReps)
	}
	for _, d := range rep.Daemon {
		if d.Connected != d.Servers || len(d.RSS) != cfg.DaemonSamples || d.RSSMedian() <= 0 || d.AllStarted <= 0 ||
			(d.Servers > 0 && d.PollConnected <= 0) {
			t.Errorf("daemon-scale %s: %d of %d connected (%s), RSS %v, every server started at %s, poll %s",
				d.Kind, d.Connected, d.Servers, d.FirstError, d.RSS, d.AllStarted, d.PollConnected)
		}
		if d.Kind == ScaleStdio && d.Children != d.Servers {
			t.Errorf("daemon-scale %s: %d children, want %d", d.Kind, d.Children, d.Servers)
		}
		if !d.ExitedBySelf || d.ExitCode != 0 || d.Left != 0 {
			t.Errorf("daemon-scale %s: SIGTERM: exited by itself %v, status %d, %d testserver processes left; log: %q",
				d.Kind, d.ExitedBySelf, d.ExitCode, d.Left, d.Problems)
		}
	}
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// CompareBuilds runs: two daemons of one build against the direct side,
// every block measured, and a report that names both.
func TestCompareBuildsQuick(t *testing.T) {
	sbBin, sbDir, err := BuildSwitchboard()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sbDir)
	ctx := runContext(t)
	cfg := ABConfig{Testserver: testserver.Binary(t), Builds: []string{sbBin, sbBin}, Reps: 2, Calls: 20, Warmup: 5, Payload: 1024,
		Logf: t.Logf}
	for _, overHTTP := range []bool{false, true} {
		cfg.HTTP = overHTTP
		res, err := CompareBuilds(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Builds) != 2 || len(res.Direct.P50) != 2 {
			t.Fatalf("%d builds, %d direct blocks; want 2 and 2", len(res.Builds), len(res.Direct.P50))
		}
		for _, s := range res.Builds {
			if len(s.P50) != 2 || len(s.CPU) != 2 || s.P50[0] <= 0 || s.P99[1] <= 0 || s.CPU[0] <= 0 {
				t.Errorf("%s: a block without figures: %+v", s.Name, s)
			}
		}
		direct := map[bool]string{false: SideDirectStdio, true: SideDirect}[overHTTP]
		if md := res.Markdown(); !strings.Contains(md, sbBin) || !strings.Contains(md, "faster in") || !strings.Contains(md, "over "+direct) {
			t.Errorf("report (HTTP %v):\n%s", overHTTP, md)
		}
	}
	if _, err := CompareBuilds(ctx, ABConfig{Testserver: cfg.Testserver}); err == nil {
		t.Error("CompareBuilds with no build: no error")
	}
}
