package gateway_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// A client's resource subscription survives the upstream server's crash:
// the session subscribes again on the new connection, so updates keep
// coming, and the view keeps why the connection was lost.
func TestSubscriptionSurvivesAnUpstreamRestart(t *testing.T) {
	e := newEnv(t, "", stdio(t, "srv"))
	updates := make(chan string, 16)
	cs := e.connect("/mcp/srv", &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	})
	waitTools(t, cs, "log")
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://hello"}); err != nil {
		t.Fatal(err)
	}
	expectUpdate := func(when string) {
		t.Helper()
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "log", Arguments: map[string]any{"message": when}}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updates:
			if uri != "test://hello" {
				t.Fatalf("%s: update of %q", when, uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no resources/updated for the subscribed resource", when)
		}
	}
	expectUpdate("before the crash")

	before, _ := e.reg.Get("srv")
	syscall.Kill(before.Runtime.PID, syscall.SIGKILL)
	var after sb.ServerView
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after, _ = e.reg.Get("srv"); after.Runtime.Status == sb.StatusConnected && after.Runtime.PID != before.Runtime.PID {
			break
		}
	}
	if after.Runtime.PID == before.Runtime.PID || after.Runtime.Status != sb.StatusConnected {
		t.Fatalf("not reconnected: %+v", after.Runtime)
	}
	if d := after.Runtime.LastDrop; d == nil || d.Phase != sb.PhaseRuntime || d.Code != sb.CodeProcessExited {
		t.Errorf("last_drop %+v, want the runtime process_exited drop", d)
	}
	expectUpdate("after the crash")
}
