package registry_test

import (
	"context"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A test session of a server whose handshake never ends reports what the
// live session says of it, the attempt's error (phase initialize, code
// timeout), not status connecting with no error: the startup wait of
// Start and the attempt's own timeout are the same duration, and on the
// old code Start's won, so the web page's Test button showed nothing.
func TestTestSessionOfAHungHandshakeReportsTheTimeout(t *testing.T) {
	cfg := probeServer(t, "hung", "-hang-initialize")
	cfg.StartupTimeoutMS = 300
	res, err := registry.TestSession(context.Background(), cfg, &upstream.Options{Sandbox: sandboxRuntime(t), SandboxDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	rt := res.Runtime
	if rt.Status != sb.StatusError || rt.Error == nil || rt.Error.Phase != sb.PhaseInitialize || rt.Error.Code != sb.CodeTimeout {
		t.Fatalf("test of a hung handshake: status %s, error %+v; want error, phase initialize, code timeout", rt.Status, rt.Error)
	}
}
