package audit_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
)

// BenchmarkRecordAndWrite is the audit log's whole cost per call: Record
// on the call's path (16 callers) and the writer's share, the batches
// written to a SQLite file, all of it counted (the timer stops once the
// writer has written the last entry). Compare with the CPU of a relayed
// call (BENCHMARKS.md):
//
//	go test -run='^$' -bench=RecordAndWrite -benchtime=100000x ./audit/
func BenchmarkRecordAndWrite(b *testing.B) {
	st := openStore(b)
	l := audit.New(audit.Options{Store: st, QueueSize: b.N + 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	args := []byte(`{"text":"` + strings.Repeat("x", 1<<10) + `"}`)
	cctx := audit.WithSurface(sb.WithPrincipal(context.Background(), sb.Principal{Name: "ci"}), sb.SurfaceMCPServer, "")
	b.SetParallelism(8)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(cctx, sb.AuditEntry{Kind: sb.AuditTool, Server: "up", Name: "echo", Outcome: "ok", ResultBytes: 1100}, args)
		}
	})
	cancel()
	<-done
	b.StopTimer()
	// The machine is shared: the process's CPU time says more than the
	// wall clock.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if s := l.Stats(); s.Written != uint64(b.N) {
		b.Fatalf("stats %+v, want %d written", s, b.N)
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
