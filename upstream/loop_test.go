package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestRequestNamingItsOwnInstanceIsALoop: A→A. A request whose Via names
// the instance asked to serve it comes from that instance's own session.
func TestRequestNamingItsOwnInstanceIsALoop(t *testing.T) {
	a, b := upstream.NewInstance(), upstream.NewInstance()
	if !a.Arrived([]string{a.Via()}, true) {
		t.Errorf("A did not recognise its own Via %q", a.Via())
	}
	if a.Arrived([]string{b.Via()}, true) || a.Arrived(nil, true) || a.Arrived([]string{"garbage;\x00, ,"}, true) {
		t.Error("A took another's request for its own")
	}
}

// TestUsersArePassedOnSoThatACycleIsCaught: A→B→A and A→B→C→A. An
// instance names in its requests the instances that use its aggregate
// /mcp, so a request that goes round a cycle names the instance it
// started from; using one server of another (/mcp/NAME) is no loop.
func TestUsersArePassedOnSoThatACycleIsCaught(t *testing.T) {
	a, b, c := upstream.NewInstance(), upstream.NewInstance(), upstream.NewInstance()
	if b.Arrived([]string{a.Via()}, true) {
		t.Fatal("A→B refused")
	}
	if !a.Arrived([]string{b.Via()}, true) {
		t.Errorf("B→A after A→B not refused: B's Via %q", b.Via())
	}
	if c.Arrived([]string{b.Via()}, true) || !a.Arrived([]string{c.Via()}, true) {
		t.Errorf("A→B→C→A not refused: C's Via %q", c.Via())
	}

	d, e := upstream.NewInstance(), upstream.NewInstance()
	if e.Arrived([]string{d.Via()}, false) || d.Arrived([]string{e.Via()}, true) {
		t.Errorf("D using one server of E's, and E using D, refused: E's Via %q", e.Via())
	}
}

// TestViaIsBounded: however many instances use one, its requests name a
// bounded number of them.
func TestViaIsBounded(t *testing.T) {
	a := upstream.NewInstance()
	for range 1000 {
		a.Arrived([]string{upstream.NewInstance().Via()}, true)
	}
	if n := len(strings.Split(a.Via(), ",")); n > 16 {
		t.Fatalf("Via names %d instances; want at most 16", n)
	}
}

// TestSessionSaysWhoItIsAndStopsOnALoop: every request of a remote session
// carries its instance's Via, and a server that answers 508 Loop Detected
// (what serve's /mcp answers its own sessions) ends the session in
// status error with code loop, phase config, without another attempt.
func TestSessionSaysWhoItIsAndStopsOnALoop(t *testing.T) {
	self := upstream.NewInstance()
	var mu sync.Mutex
	var vias []string
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		vias = append(vias, r.Header.Get(upstream.ViaHeader))
		mu.Unlock()
		if self.Arrived(r.Header.Values(upstream.ViaHeader), true) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusLoopDetected)
			fmt.Fprint(w, `{"error":{"code":"loop","message":"this request comes from this Switchboard itself"}}`)
			return
		}
		http.NotFound(w, r)
	})
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "self", Transport: sb.TransportRemote, URL: ts.URL + "/mcp"},
		upstream.Options{Instance: self})
	err := s.Start(context.Background())
	info := s.Info()
	if err == nil || info.Status != sb.StatusError || info.Error == nil || info.Error.Code != sb.CodeLoop ||
		info.Error.Phase != sb.PhaseConfig || !strings.Contains(info.Error.Message, "Switchboard itself") || info.NextRetryAt != nil {
		t.Fatalf("Start: %v; runtime %+v %+v; want status error, code loop in phase config, no retry", err, info, info.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(vias) == 0 || len(vias) > 4 || vias[0] != self.Via() {
		t.Fatalf("the server saw Via %q; want a few requests, each with %q", vias, self.Via())
	}
}

// TestOtherSwitchboardsAreServedAsUsual: a request from another instance
// is not refused, and the session connects.
func TestOtherSwitchboardsAreServedAsUsual(t *testing.T) {
	srv := inProcessServer(t)
	served := upstream.NewInstance()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if served.Arrived(r.Header.Values(upstream.ViaHeader), true) {
			w.WriteHeader(http.StatusLoopDetected)
			return
		}
		h.ServeHTTP(w, r)
	})
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "other", Transport: sb.TransportStreamableHTTP, URL: ts.URL},
		upstream.Options{Instance: upstream.NewInstance()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}
