package bench

import (
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

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
		var took []time.Duration
		found := 0
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			found += len(ix.Search(searchQueries[i%len(searchQueries)], 10, nil))
			took = append(took, time.Since(start))
		}
		if found == 0 {
			b.Fatal("no query found anything")
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(perTool, "index-B/tool")
	})
	b.Run("reindex-one-server", func(b *testing.B) {
		var took []time.Duration
		for i := 0; b.Loop(); i++ {
			s := servers[i%len(servers)]
			tools := slices.Clone(catalog[s]) // the gateway gives fresh ones on every change
			start := time.Now()
			ix.Set(s, tools)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	})
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
