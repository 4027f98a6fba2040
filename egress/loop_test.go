package egress

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestRequestNamingItsOwnInstanceIsALoop: A→A. A request whose Via names
// the instance asked to serve it comes from that instance's own session.
func TestRequestNamingItsOwnInstanceIsALoop(t *testing.T) {
	a, b := NewInstance(), NewInstance()
	if !a.Arrived([]string{a.Via()}) {
		t.Errorf("A did not recognise its own Via %q", a.Via())
	}
	if a.Arrived([]string{b.Via()}) || a.Arrived(nil) || a.Arrived([]string{"garbage;\x00, ,"}) {
		t.Error("A took another's request for its own")
	}
}

// TestReachLearntFromAnswersCatchesACycle: A→B→A and A→B→C→A. An instance
// learns from its servers' answers which instances it reaches, and refuses
// a request from any of them; a link that ends is no longer believed, and
// an endpoint of one server (/mcp/NAME) names only what that server
// reaches.
func TestReachLearntFromAnswersCatchesACycle(t *testing.T) {
	a, b, c := NewInstance(), NewInstance(), NewInstance()
	ctx, end := context.WithCancel(context.Background())
	defer end()
	aToB := a.Track(ctx, "b")
	if b.Arrived([]string{a.Via()}) {
		t.Fatal("A→B refused")
	}
	aToB.Answered([]string{b.ReachOf("")})
	if !a.Arrived([]string{b.Via()}) {
		t.Errorf("B→A after A→B not refused: A reaches %q", a.ReachOf(""))
	}

	b.Track(ctx, "c").Answered([]string{c.ReachOf("")})
	aToB.Answered([]string{b.ReachOf("")}) // A's next request to B
	if c.Arrived([]string{b.Via()}) || !a.Arrived([]string{c.Via()}) {
		t.Errorf("A→B→C→A not refused: A reaches %q", a.ReachOf(""))
	}
	if got, want := a.ReachOf("b"), a.ID()+", "; !strings.HasPrefix(got, want) || !strings.Contains(got, c.ID()) {
		t.Errorf("A's /mcp/b reaches %q, want A, then B and C", got)
	}
	if got := a.ReachOf("other"); got != a.ID() {
		t.Errorf("A's /mcp/other reaches %q, want only A", got)
	}

	aToB.Answered(nil) // B's URL now leads to a server that is no Switchboard
	if a.Arrived([]string{b.Via()}) {
		t.Error("B refused after A's server stopped reaching it")
	}
	aToB.Answered([]string{b.ReachOf("")})
	end()
	if a.Arrived([]string{b.Via()}) {
		t.Error("B refused after A's link to it ended")
	}
}

// TestForgedViaTeachesNothing: a client that names another Switchboard in
// its Via (an mcp token holder naming the Switchboard behind one of this
// one's servers) gets only its own request refused or served: this
// instance's requests and answers name no one new, so no session of it
// is stopped.
func TestForgedViaTeachesNothing(t *testing.T) {
	a, b := NewInstance(), NewInstance()
	for range 3 {
		a.Arrived([]string{b.ID() + ", " + b.ID()})
	}
	if a.Via() != a.ID() || a.ReachOf("") != a.ID() {
		t.Errorf("after forged requests A sends Via %q and answers Reach %q; want only its own id", a.Via(), a.ReachOf(""))
	}
	if b.Arrived([]string{a.Via()}) {
		t.Error("B refuses A's request after a client forged B's id to A")
	}
}

// TestReachIsBounded: however many instances one reaches, its answers name
// a bounded number of them.
func TestReachIsBounded(t *testing.T) {
	a := NewInstance()
	ctx, end := context.WithCancel(context.Background())
	defer end()
	for i := range 1000 {
		a.Track(ctx, fmt.Sprint("s", i)).Answered([]string{NewInstance().ReachOf("")})
	}
	if n := len(strings.Split(a.ReachOf(""), ",")); n > 16 {
		t.Fatalf("Reach names %d instances; want at most 16", n)
	}
}
