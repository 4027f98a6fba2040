package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
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
