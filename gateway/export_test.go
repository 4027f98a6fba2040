package gateway

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// SetClientSweep makes the gateways created until the test ends look for
// ended downstream sessions every d.
func SetClientSweep(t *testing.T, d time.Duration) {
	prev := clientSweep
	clientSweep = d
	t.Cleanup(func() { clientSweep = prev })
}

// RelayServed reports how many tools/call requests g's relay has served.
func RelayServed(g *Gateway) int64 { return g.relays.served.Load() }

// AggregateTools returns the tool names the aggregate shows now, sorted,
// without the wait for first attempts that a tools/list makes.
func AggregateTools(g *Gateway) []string {
	g.agg.mu.Lock()
	defer g.agg.mu.Unlock()
	return slices.Sorted(maps.Keys(g.agg.tools))
}
