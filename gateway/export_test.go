package gateway

import (
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
