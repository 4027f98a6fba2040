//go:build linux

package bench

import (
	"maps"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/switchboard-mcp/switchboard/toolsearch"
	"github.com/switchboard-mcp/switchboard/toolsearch/toolsearchtest"
)

// Issue 33's catalog: 5,000 tools of 100 servers.
const (
	searchServers   = 100
	searchPerServer = 50
)

// searchQueries are queries of plain words, of the kinds a model sends.
var searchQueries = []string{
	"create a new invoice", "list the open tickets", "delete a customer permanently", "search messages by keyword",
	"export payments as csv", "archive an old project", "assign the incident to a team", "how many alerts match",
	"get one deployment by id", "update the fields of a subscription", "read the contents of a file",
	"send an email to a contact", "restart the build pipeline", "find the repository branch", "backup snapshot of a volume",
	"who has permission on the folder", "newest releases first", "the certificate of a domain", "rate limited calls",
	"requires the write scope", "count employees in payroll", "shipment of an order", "dashboard chart of metrics",
}

// BenchmarkToolSearch measures issue 33's figures on 5,000 generated
// tools: a search's time (p50 and p99 over every query, -benchtime
// times), one server's re-index, and the index's heap per tool (the
// tools' own text not counted: the gateway holds it anyway).
func BenchmarkToolSearch(b *testing.B) {
	catalog := toolsearchtest.Catalog(searchServers, searchPerServer)
	servers := slices.Sorted(maps.Keys(catalog))

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix := toolsearch.New()
	for _, s := range servers {
		ix.Set(s, catalog[s])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if ix.Len() != searchServers*searchPerServer {
		b.Fatalf("indexed %d tools", ix.Len())
	}
	perTool := float64(after.HeapAlloc-before.HeapAlloc) / float64(ix.Len())

	b.Run("search", func(b *testing.B) {
		var q quantiles
		found := 0
		runtime.LockOSThread() // the thread's CPU clock is this goroutine's
		defer runtime.UnlockOSThread()
		for i := 0; b.Loop(); i++ {
			m := q.start()
			found += len(ix.Search(searchQueries[i%len(searchQueries)], 10, nil))
			q.stop(m)
		}
		if found == 0 {
			b.Fatal("no query found anything")
		}
		q.report(b)
		b.ReportMetric(perTool, "index-B/tool")
	})
	b.Run("reindex-one-server", func(b *testing.B) {
		var q quantiles
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 0; b.Loop(); i++ {
			s := servers[i%len(servers)]
			tools := slices.Clone(catalog[s]) // the gateway gives fresh ones on every change
			m := q.start()
			ix.Set(s, tools)
			q.stop(m)
		}
		q.report(b)
	})
}

// quantiles collects the wall time and the thread's CPU time of each
// operation. On a loaded machine the wall time's tail is the scheduler's
// (the thread waiting for a core), the CPU time's the operation's own.
type quantiles struct{ wall, cpu []time.Duration }

type mark struct {
	wall time.Time
	cpu  time.Duration
}

func (q *quantiles) start() mark { return mark{time.Now(), threadCPU()} }

func (q *quantiles) stop(m mark) {
	q.cpu = append(q.cpu, threadCPU()-m.cpu)
	q.wall = append(q.wall, time.Since(m.wall))
}

func (q *quantiles) report(b *testing.B) {
	for _, s := range []struct {
		name string
		d    []time.Duration
	}{{"wall", q.wall}, {"cpu", q.cpu}} {
		slices.Sort(s.d)
		b.ReportMetric(float64(s.d[len(s.d)/2].Nanoseconds())/1e3, s.name+"-p50-µs")
		b.ReportMetric(float64(s.d[len(s.d)*99/100].Nanoseconds())/1e3, s.name+"-p99-µs")
	}
}

// threadCPU is the CPU time of the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// Example figures of the benchmark are in bench/results/issue33; this
// keeps the catalog's shape honest: as many tools as asked, unique names
// per server.
func TestSearchCatalogShape(t *testing.T) {
	catalog := toolsearchtest.Catalog(searchServers, searchPerServer)
	if len(catalog) != searchServers {
		t.Fatalf("%d servers", len(catalog))
	}
	for s, tools := range catalog {
		names := map[string]bool{}
		for _, tool := range tools {
			if names[tool.Name] {
				t.Fatalf("%s: %s twice", s, tool.Name)
			}
			names[tool.Name] = true
		}
		if len(tools) != searchPerServer {
			t.Fatalf("%s: %d tools", s, len(tools))
		}
	}
}
