package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

// The sides of the endpoint scenario, besides SideDirect (a go-sdk client
// calling the testserver's own Streamable HTTP endpoint: the go-sdk's
// mcp.NewStreamableHTTPHandler over the testserver's mcp.Server, the
// "direct go-sdk HTTP" baseline of issue 13).
const (
	SideDirectStdio     = "direct go-sdk stdio"               // a go-sdk client over mcp.CommandTransport to a testserver child
	SideGateway         = "Switchboard /mcp"                  // the aggregated endpoint: tool up__echo (HTTP upstream)
	SideGatewayOne      = "Switchboard /mcp/{name}"           // one server passed through: tool echo at /mcp/up (HTTP upstream)
	SideGatewayStdio    = "Switchboard /mcp, stdio up"        // the aggregated endpoint: tool upstdio__echo (stdio upstream)
	SideGatewayOneStdio = "Switchboard /mcp/{name}, stdio up" // tool echo at /mcp/upstdio (stdio upstream)
	SideFloorRelay      = "floor relay, stdio up"             // bench/cmd/floorrelay: a relay with no MCP logic in front of a testserver child
	// SideGatewayOneStdioNew is SideGatewayOneStdio for a client of the
	// 2026-07-28 protocol: stateless, every request on its own.
	SideGatewayOneStdioNew = "Switchboard /mcp/{name}, stdio up, 2026-07-28"
)

// endpointSides is the order the endpoint sides are set up and listed in.
var endpointSides = []string{SideDirect, SideDirectStdio, SideGateway, SideGatewayOne, SideGatewayStdio, SideGatewayOneStdio, SideGatewayOneStdioNew, SideFloorRelay}

// endpointDirect reports whether side calls the testserver without the daemon.
func endpointDirect(side string) bool { return side == SideDirect || side == SideDirectStdio }

// endpointServer and endpointStdioServer are the names of the upstream
// servers in the daemon: the HTTP testserver, and a stdio testserver child.
const (
	endpointServer      = "up"
	endpointStdioServer = "upstdio"
)

// EndpointInfo describes the set-up of the endpoint scenario.
type EndpointInfo struct {
	// UpstreamProtocol is what the daemon's session to the testserver
	// negotiated; every client of the scenario pins pinnedProtocol.
	UpstreamProtocol string `json:"upstream_protocol"`
	// DaemonRSS is the daemon's VmRSS at the end of the scenario.
	DaemonRSS uint64 `json:"daemon_rss"`
	// Problems are the first WARN and ERROR lines of the daemon's log
	// (a reconnect of an upstream in the middle of a sample, say).
	Problems []string `json:"problems,omitempty"`
}

// runEndpoint measures a go-sdk client calling echo through the daemon's
// MCP endpoint against the same client calling the testserver directly:
// one testserver process serving Streamable HTTP, fronted by a `switchboard
// serve` process (the built binary) as a streamable-http server, and a
// testserver child of the daemon over stdio; directly, the HTTP testserver
// and a testserver child of this process over stdio. Every
// payload size is measured sequentially and with cfg.Callers callers,
// cfg.EndpointReps times, the sides interleaved in every repetition.
func runEndpoint(ctx context.Context, cfg *Config) ([]*OverheadResult, *EndpointInfo, error) {
	server, err := startHTTPServer(cfg.Testserver)
	if err != nil {
		return nil, nil, err
	}
	defer server.stop()

	dir, err := os.MkdirTemp("", "sbbench-endpoint-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	floorBin, err := gobuild.Build("./bench/cmd/floorrelay", filepath.Join(dir, "floorrelay"))
	if err != nil {
		return nil, nil, err
	}
	floor, err := startListener(floorBin, "--", cfg.Testserver)
	if err != nil {
		return nil, nil, fmt.Errorf("endpoint: the floor relay: %w", err)
	}
	defer floor.stop()
	floorUp := childrenOf(floor.pid)
	if len(floorUp) != 1 {
		return nil, nil, fmt.Errorf("endpoint: the floor relay (pid %d) has %d children, want 1 (its testserver)", floor.pid, len(floorUp))
	}
	var args []string
	if cfg.ProfileDir != "" {
		// serve's CPU profile of the whole scenario: where the daemon's
		// time goes (BENCHMARKS.md §6b).
		args = []string{"--cpu-profile", filepath.Join(cfg.ProfileDir, "serve-endpoint-cpu.pprof")}
	}
	d, err := startDaemon(ctx, cfg.Switchboard, filepath.Join(dir, "switchboard.db"), args...)
	if err != nil {
		return nil, nil, err
	}
	defer d.kill()
	// The same process, through Switchboard, at the same protocol as the
	// direct clients.
	if _, err := d.api.CreateServer(ctx, &sb.ServerConfig{Name: endpointServer, Transport: sb.TransportStreamableHTTP,
		URL: server.url, ProtocolVersion: pinnedProtocol}); err != nil {
		return nil, nil, err
	}
	st, err := d.waitServerConnected(ctx, endpointServer, 30*time.Second)
	if err != nil {
		return nil, nil, err
	}
	info := &EndpointInfo{UpstreamProtocol: st.Runtime.ProtocolVersion}
	// The same testserver binary as a stdio child of the daemon.
	if _, err := d.api.CreateServer(ctx, &sb.ServerConfig{Name: endpointStdioServer, Transport: sb.TransportStdio,
		Command: cfg.Testserver, ProtocolVersion: pinnedProtocol}); err != nil {
		return nil, nil, err
	}
	if _, err := d.waitServerConnected(ctx, endpointStdioServer, 30*time.Second); err != nil {
		return nil, nil, err
	}
	// The testserver is the daemon's child, or its grandchild or deeper
	// under a sandbox: the one leaf of the daemon's process tree, beside
	// the sandbox's network helper.
	stdioUp := d.PID
	for {
		kids := slices.DeleteFunc(childrenOf(stdioUp), func(pid int) bool {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			return strings.TrimSpace(string(comm)) == "slirp4netns"
		})
		if len(kids) == 0 {
			break
		}
		if len(kids) != 1 {
			return nil, nil, fmt.Errorf("endpoint: process %d of the daemon's tree has %d children, want 1 (the stdio testserver)", stdioUp, len(kids))
		}
		stdioUp = kids[0]
	}
	if stdioUp == d.PID {
		return nil, nil, fmt.Errorf("endpoint: the daemon has no child (the stdio testserver)")
	}

	type endpointSide struct {
		name, url, tool string
		protocol        string // the client's protocol version: pinnedProtocol unless set
		upstream        int    // the pid of the testserver answering
		relay           int    // the pid of the process between, if any: the daemon or the floor relay
		cs              *mcp.ClientSession
		hc              *http.Client
	}
	sides := []*endpointSide{
		{name: SideDirect, url: server.url, tool: "echo", upstream: server.pid},
		{name: SideDirectStdio, tool: "echo"},
		{name: SideGateway, url: d.MCPURL, tool: endpointServer + "__echo", upstream: server.pid, relay: d.PID},
		{name: SideGatewayOne, url: d.MCPURL + "/" + endpointServer, tool: "echo", upstream: server.pid, relay: d.PID},
		{name: SideGatewayStdio, url: d.MCPURL, tool: endpointStdioServer + "__echo", upstream: stdioUp, relay: d.PID},
		{name: SideGatewayOneStdio, url: d.MCPURL + "/" + endpointStdioServer, tool: "echo", upstream: stdioUp, relay: d.PID},
		{name: SideGatewayOneStdioNew, url: d.MCPURL + "/" + endpointStdioServer, tool: "echo", upstream: stdioUp, relay: d.PID, protocol: newProtocol},
		{name: SideFloorRelay, url: floor.url, tool: "echo", upstream: floorUp[0], relay: floor.pid},
	}
	defer func() {
		for _, s := range sides {
			if s.cs != nil {
				_ = s.cs.Close()
			}
			if s.hc != nil {
				s.hc.CloseIdleConnections()
			}
		}
	}()
	for _, s := range sides {
		if s.name == SideDirectStdio {
			cmd := exec.Command(cfg.Testserver)
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			s.cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench-endpoint"}, nil).
				Connect(cctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: pinnedProtocol})
			cancel()
			if err != nil {
				return nil, nil, fmt.Errorf("endpoint %s: starting %s: %w", s.name, cfg.Testserver, err)
			}
			s.upstream = cmd.Process.Pid
			if v := s.cs.InitializeResult().ProtocolVersion; v != pinnedProtocol {
				return nil, nil, fmt.Errorf("endpoint %s: negotiated protocol %q, want %q", s.name, v, pinnedProtocol)
			}
			continue
		}
		// Each side its own connection pool, large enough for every
		// caller to keep its connection (the default keeps 2 per host).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 64
		s.hc = &http.Client{Transport: tr}
		if s.relay == d.PID {
			s.hc.Transport = d.Transport(tr) // the daemon's credential
		}
		protocol := cmp.Or(s.protocol, pinnedProtocol)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s.cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench-endpoint"}, nil).
			Connect(cctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.hc},
				&mcp.ClientSessionOptions{ProtocolVersion: protocol})
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("endpoint %s: connecting to %s: %w", s.name, s.url, err)
		}
		if v := s.cs.InitializeResult().ProtocolVersion; v != protocol {
			return nil, nil, fmt.Errorf("endpoint %s: negotiated protocol %q, want %q", s.name, v, protocol)
		}
	}

	// The "Switchboard" CPU of a side is its relay's: the daemon's, or
	// the floor relay's; the daemon's (idle) for the direct sides.
	probe := func(relay, up int) func() func(*Sample) {
		if relay == 0 {
			relay = d.PID
		}
		return func() func(*Sample) {
			c0, d0, u0 := selfCPU(), procCPU(relay), procCPU(up)
			return func(smp *Sample) {
				smp.ClientCPU, smp.DaemonCPU, smp.UpstreamCPU = selfCPU()-c0, procCPU(relay)-d0, procCPU(up)-u0
			}
		}
	}
	modes := []struct {
		mode           string
		callers, calls int
	}{
		{Sequential, 1, cfg.Calls},
		{Concurrent, cfg.Callers, cfg.ConcurrentCalls},
	}
	lat := make([]time.Duration, max(cfg.Calls, cfg.ConcurrentCalls))
	var results []*OverheadResult
	for _, size := range cfg.EndpointPayloads {
		text := PayloadText(size)
		args := map[string]any{"text": text}
		echo := make(map[string]func(context.Context) error, len(sides))
		for _, s := range sides {
			cs, tool := s.cs, s.tool
			echo[s.name] = func(ctx context.Context) error {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					return err
				}
				return checkText(res, text)
			}
			if err := echo[s.name](ctx); err != nil { // qualification: the path answers correctly
				return nil, nil, fmt.Errorf("endpoint %s, %d B: first call: %w", s.name, size, err)
			}
		}
		for _, m := range modes {
			res := &OverheadResult{Transport: "streamable-http", Mode: m.mode, Callers: m.callers, Payload: size,
				Sides: endpointSides, Samples: map[string][]Sample{}}
			results = append(results, res)
			for rep := range cfg.EndpointReps {
				for i := range sides {
					s := sides[(i+rep)%len(sides)] // rotate the order every repetition
					if err := ctx.Err(); err != nil {
						return nil, nil, err
					}
					measure(ctx, echo[s.name], cfg.Warmup, m.callers, lat)
					// The entries of the calls before are written first: a
					// direct side's block, the daemon idle, was charged a
					// second's worth of the daemon's calls (5 ms, 150 µs a
					// 1 KiB call, more than the testserver's tenth).
					if err := d.waitAuditWritten(ctx, 30*time.Second); err != nil {
						return nil, nil, fmt.Errorf("endpoint %s: %w", s.name, err)
					}
					smp := measureProbe(ctx, echo[s.name], m.calls, m.callers, lat, probe(s.relay, s.upstream))
					n := time.Duration(max(1, smp.Calls))
					smp.ClientCPU, smp.DaemonCPU, smp.UpstreamCPU = smp.ClientCPU/n, smp.DaemonCPU/n, smp.UpstreamCPU/n
					res.Samples[s.name] = append(res.Samples[s.name], smp)
					cfg.logf("endpoint %s %s rep %d/%d %-34s %7.0f calls/s p50 %6.0fµs p99 %6.0fµs CPU/call client %4.0fµs switchboard %4.0fµs testserver %4.0fµs errors %d",
						fmtPayload(size), m.mode, rep+1, cfg.EndpointReps, s.name, smp.CallsPerSec(), micros(smp.P50), micros(smp.P99),
						micros(smp.ClientCPU), micros(smp.DaemonCPU), micros(smp.UpstreamCPU), smp.Errors)
				}
			}
		}
	}
	info.DaemonRSS = rssBytes(d.PID)
	info.Problems = d.snapshotLog().Problems

	for _, s := range sides {
		_ = s.cs.Close()
		s.cs = nil
	}
	if took, clean := d.terminate(); !clean {
		return nil, nil, fmt.Errorf("endpoint: the daemon did not exit within %s of SIGTERM", took.Round(time.Millisecond))
	}
	return results, info, nil
}

// PayloadText returns n bytes of text that JSON needs no escapes for.
func PayloadText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return string(b)
}
