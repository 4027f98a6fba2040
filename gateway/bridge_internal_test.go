package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A held call is cancelled, and dropped from the table, once heldTTL has
// passed without its client's retry; one taken before is not. The table
// holds at most heldMax calls.
func TestHeldCallsExpireAndAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tab heldTable
		cancelled := 0
		held := func() *bridgedCall {
			return &bridgedCall{principal: "alice", server: "s", tool: "t", cancel: func() { cancelled++ }}
		}
		state, ok := tab.put(held())
		kept, _ := tab.put(held())
		if !ok {
			t.Fatal("put refused on an empty table")
		}
		time.Sleep(heldTTL - time.Second)
		if _, err := tab.take(kept, "alice", "s", "t"); err != nil {
			t.Fatalf("take before expiry: %v", err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if cancelled != 1 || tab.len() != 0 {
			t.Fatalf("after heldTTL: %d cancelled, %d held; want the one not taken cancelled, none held", cancelled, tab.len())
		}
		if _, err := tab.take(state, "alice", "s", "t"); err != errStateUnknown {
			t.Fatalf("take after expiry: %v, want %v", err, errStateUnknown)
		}

		for range heldMax {
			if _, ok := tab.put(held()); !ok {
				t.Fatal("put refused below heldMax")
			}
		}
		if _, ok := tab.put(held()); ok {
			t.Fatalf("put accepted past heldMax (%d)", heldMax)
		}
	})
}

// A bridged call's first progress reaches the client even when the
// upstream sends it at once: the forwarder is in place before the
// upstream call starts. (Set after, as it was, the first notification was
// dropped whenever the call's goroutine ran first: conformance's
// tools-call-with-progress got 2 of 3 at load.)
func TestABridgedCallsFirstProgressIsForwarded(t *testing.T) {
	g := &Gateway{}
	for range 200 {
		var got []float64
		_, err := g.bridge(context.Background(), "s", "t", sb.InvokeOptions{Input: &sb.InputRound{}}, nil,
			func(p sb.Progress) { got = append(got, p.Progress) },
			func(_ context.Context, opts sb.InvokeOptions) (*upstream.Result, error) {
				opts.OnProgress(sb.Progress{Progress: 1})
				opts.OnProgress(sb.Progress{Progress: 2})
				return upstream.NewResult(json.RawMessage(`{"content":[]}`))
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("the client got progress %v, want [1 2]", got)
		}
	}
}
