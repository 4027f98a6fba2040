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
