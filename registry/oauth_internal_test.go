package registry

import (
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// A session in phase auth is reconnected for an authorization made after
// it failed, never for one it failed with (a refresh, a step-up's scopes or
// a refused token would otherwise restart it in a loop).
func TestWaitsFor(t *testing.T) {
	now := time.Now()
	failed := func(at time.Time) sb.RuntimeInfo {
		return sb.RuntimeInfo{Status: sb.StatusError, Error: &sb.ErrorInfo{Phase: sb.PhaseAuth, At: at}}
	}
	for _, tc := range []struct {
		name       string
		info       sb.RuntimeInfo
		authorized time.Time
		want       bool
	}{
		{"authorized after the failure", failed(now.Add(-time.Minute)), now, true},
		{"failed with the grant", failed(now.Add(time.Second)), now, false},
		{"no usable grant", failed(now), time.Time{}, false},
	} {
		if got := waitsFor(tc.info, tc.authorized); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
