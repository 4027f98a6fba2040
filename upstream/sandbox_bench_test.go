package upstream_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// The figures of RELIABILITY.md's sandbox section:
//
//	go test ./upstream/ -run '^$' -bench 'Sandbox' -benchtime 20x
//	SWITCHBOARD_BENCH_NPX=1 go test ./upstream/ -run '^$' -bench 'SandboxedNPX' -benchtime 3x
//
// The second needs the npm registry.

// benchStart starts a session for cfg, waits until it is connected and
// returns it with the time that took.
func benchStart(b *testing.B, cfg *sb.ServerConfig, opts *upstream.Options) (*upstream.Session, time.Duration) {
	b.Helper()
	o := *opts
	o.Logger = slog.New(slog.DiscardHandler)
	o.HealthInterval = -1
	s := upstream.New(cfg, &o)
	start := time.Now()
	if err := s.Start(context.Background()); err != nil {
		b.Fatalf("Start: %v; logs:\n%s", err, strings.Join(s.Logs(), "\n"))
	}
	return s, time.Since(start)
}

func benchRuntime(b *testing.B) *sandbox.Runtime {
	rt := &sandbox.Runtime{StateDir: b.TempDir()}
	if _, err := rt.Probe(context.Background()); err != nil {
		b.Skipf("bubblewrap does not work here: %v", err)
	}
	return rt
}

// BenchmarkSandboxSpawn measures the time from Start to a connected,
// listed session of the test server (a static Go binary), with and
// without the default sandbox profile: the difference is what the sandbox
// adds to a spawn. It also reports the memory of an idle server's
// processes (PSS, so shared pages count once): bwrap and the sandbox's
// init are what the sandbox adds.
func BenchmarkSandboxSpawn(b *testing.B) {
	rt := benchRuntime(b)
	for _, tc := range []struct {
		name string
		box  *sb.SandboxConfig
	}{
		{"unsandboxed", nil},
		{"sandboxed", &sb.SandboxConfig{Enabled: new(true)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := &sb.ServerConfig{Name: "bench", Transport: sb.TransportStdio, Command: testserver.Binary(b),
				ProtocolVersion: "2025-11-25", Sandbox: tc.box}
			var total time.Duration
			var pss, extra int64
			for b.Loop() {
				s, d := benchStart(b, cfg, &upstream.Options{Sandbox: rt})
				total += d
				b.StopTimer()
				tree := append([]int{s.Info().PID}, descendants(s.Info().PID)...)
				for i, pid := range tree {
					kb := pssKB(pid)
					pss += kb
					// bwrap's outer process and the sandbox's init come
					// before the server in the tree.
					if tc.box != nil && i < len(tree)-1 {
						extra += kb
					}
				}
				s.Shutdown(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/start")
			b.ReportMetric(float64(pss)/float64(b.N), "KiB-PSS/server")
			if tc.box != nil {
				b.ReportMetric(float64(extra)/float64(b.N), "KiB-PSS-bwrap/server")
			}
		})
	}
}

// pssKB returns the proportional set size of pid, in KiB.
func pssKB(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb
		}
	}
	return 0
}

// BenchmarkSandboxedNPXStart measures the first start of
// `npx -y @modelcontextprotocol/server-memory` in a sandbox with an empty
// workspace (npx downloads the package into the workspace's npm cache),
// and the second start of the same server, which finds it there.
func BenchmarkSandboxedNPXStart(b *testing.B) {
	if os.Getenv("SWITCHBOARD_BENCH_NPX") == "" {
		b.Skip("set SWITCHBOARD_BENCH_NPX=1 to download from the npm registry")
	}
	env := map[string]string{"MEMORY_FILE_PATH": sb.SandboxWorkspacePath + "/memory.jsonl"}
	for _, k := range []string{"NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v // a TLS-inspecting proxy's CA, named as a config would
		}
	}
	cfg := &sb.ServerConfig{Name: "memory", Transport: sb.TransportStdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: env, Sandbox: &sb.SandboxConfig{Enabled: new(true)}}
	var first, second time.Duration
	for b.Loop() {
		rt := benchRuntime(b) // an empty state directory: a cold cache
		s, d := benchStart(b, cfg, &upstream.Options{Sandbox: rt})
		first += d
		s.Shutdown(context.Background())
		s, d = benchStart(b, cfg, &upstream.Options{Sandbox: rt})
		second += d
		s.Shutdown(context.Background())
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "s/first-start")
	b.ReportMetric(second.Seconds()/float64(b.N), "s/second-start")
}
