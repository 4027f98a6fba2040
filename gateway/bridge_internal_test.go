package gateway

import (
	"testing"
	"testing/synctest"
	"time"
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
