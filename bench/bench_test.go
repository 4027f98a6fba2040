package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// benchSides names the sides in benchmark names.
var benchSides = []struct{ short, side string }{
	{"floor", SideFloor},
	{"direct", SideDirect},
	{"session", SideSession},
	{"executor", SideExecutor},
}

// setupSide sets up one side for a benchmark and closes it at cleanup.
func setupSide(b *testing.B, name, transport string) *side {
	b.Helper()
	bin := ""
	if transport == Stdio {
		bin = testserver.Binary(b)
	}
	s, err := newSide(context.Background(), name, transport, bin)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	if err := s.echo(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkEcho is one echo call after another: the floor, a direct go-sdk
// client, upstream.Session.CallTool and executor.Execute, in memory and to
// a stdio child. In memory the allocations include the server's.
//
//	go test -run='^$' -bench=Echo -benchtime=2000x ./bench/
func BenchmarkEcho(b *testing.B) {
	for _, transport := range []string{InMemory, Stdio} {
		for _, bs := range benchSides {
			b.Run(transport+"/"+bs.short, func(b *testing.B) {
				s := setupSide(b, bs.side, transport)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if err := s.echo(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEchoParallel is BenchmarkEcho with 16 callers at once (or the
// nearest multiple of GOMAXPROCS).
func BenchmarkEchoParallel(b *testing.B) {
	for _, transport := range []string{InMemory, Stdio} {
		for _, bs := range benchSides {
			b.Run(transport+"/"+bs.short, func(b *testing.B) {
				s := setupSide(b, bs.side, transport)
				ctx := context.Background()
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := s.echo(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkEndpointInProcess is the endpoint scenario in one process, for
// CPU profiles: a go-sdk client calling echo over Streamable HTTP on
// loopback, directly at the in-process testserver's handler ("direct"), or
// through Switchboard wired as `switchboard serve` wires it (registry,
// metrics, executor, gateway, HTTP API) at /mcp as up__echo ("gateway").
// The difference between the two profiles is Switchboard's work:
//
//	go test -run='^$' -bench='EndpointInProcess/direct/1KiB' -benchtime=3000x -cpuprofile=direct.out ./bench/
//	go test -run='^$' -bench='EndpointInProcess/gateway/1KiB' -benchtime=3000x -cpuprofile=gateway.out ./bench/
//	go tool pprof -top -diff_base=direct.out gateway.out
//
// "stdio" is the gateway in front of the testserver as a stdio child, at
// /mcp/NAME: the path of the relay (issue 13).
func BenchmarkEndpointInProcess(b *testing.B) {
	for _, path := range []string{"direct", "gateway", "stdio"} {
		for _, size := range []int{1 << 10, 32 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", path, size>>10), func(b *testing.B) {
				url, tool := endpointInProcess(b, path)
				hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				b.Cleanup(hc.CloseIdleConnections)
				ctx := context.Background()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-endpoint"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
						&mcp.ClientSessionOptions{ProtocolVersion: pinnedProtocol})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { cs.Close() })
				text := PayloadText(size)
				args := map[string]any{"text": text}
				b.ReportAllocs()
				for b.Loop() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
					if err == nil {
						err = checkText(res, text)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// endpointInProcess serves the in-process testserver over Streamable HTTP
// and, unless path is "direct", Switchboard in front of it ("gateway") or
// of a stdio testserver child ("stdio"), both on loopback; it returns the
// endpoint and the echo tool's name there.
func endpointInProcess(b *testing.B, path string) (url, tool string) {
	b.Helper()
	srv, err := testserver.NewInProcess(testserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(upstream.Close)
	if path == "direct" {
		return upstream.URL, "echo"
	}

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "switchboard.db"))
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.New(st, &registry.Options{Logger: discardLogger})
	m := metrics.New(reg)
	ex := executor.New(m.Instrument(executor.NewMCP(reg)))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: discardLogger})
	api := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Logger: discardLogger, MCP: gw.Handler()}))
	b.Cleanup(func() { // in reverse order of the above
		api.Close()
		gw.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Shutdown(sctx)
		st.Close()
	})
	if err := reg.Load(ctx); err != nil {
		b.Fatal(err)
	}
	cfg := &sb.ServerConfig{Name: endpointServer, Transport: sb.TransportStreamableHTTP, URL: upstream.URL, ProtocolVersion: pinnedProtocol}
	if path == "stdio" {
		cfg = &sb.ServerConfig{Name: endpointServer, Transport: sb.TransportStdio, Command: testserver.Binary(b), ProtocolVersion: pinnedProtocol}
	}
	if _, err := reg.Create(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		v, err := reg.Get(endpointServer)
		if err == nil && v.Runtime.Status == sb.StatusConnected {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not connected within 30s: %+v (%v)", endpointServer, v.Runtime, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if path == "stdio" {
		return api.URL + "/mcp/" + endpointServer, "echo"
	}
	return api.URL + "/mcp", endpointServer + "__echo"
}
