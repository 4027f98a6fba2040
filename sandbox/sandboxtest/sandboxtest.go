// Package sandboxtest gives tests a working bubblewrap sandbox runtime.
package sandboxtest

import (
	"context"
	"os"
	"testing"

	"github.com/switchboard-mcp/switchboard/sandbox"
)

// Runtime returns a sandbox.Runtime whose workspaces live in a temporary
// directory, after checking that bubblewrap works here. Without it the test
// skips, unless SWITCHBOARD_SANDBOX_REQUIRED is set (scripts/sandbox-setup.sh
// sets it, so the test command never skips them), when it fails.
func Runtime(t *testing.T) *sandbox.Runtime {
	t.Helper()
	rt := &sandbox.Runtime{StateDir: t.TempDir()}
	if _, err := rt.Probe(context.Background()); err != nil {
		if os.Getenv("SWITCHBOARD_SANDBOX_REQUIRED") != "" {
			t.Fatalf("bubblewrap is required (SWITCHBOARD_SANDBOX_REQUIRED) and does not work: %v", err)
		}
		t.Skipf("bubblewrap does not work here: %v", err)
	}
	return rt
}
