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
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestSessionSaysWhoItIsAndStopsOnALoop: every request of a remote session
// carries its instance's Via, and a server that answers 508 Loop Detected
// (what serve's /mcp answers its own sessions) ends the session in
// status error with code loop, phase config, without another attempt.
func TestSessionSaysWhoItIsAndStopsOnALoop(t *testing.T) {
	self := egress.NewInstance()
	var mu sync.Mutex
	var vias []string
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		vias = append(vias, r.Header.Get(egress.ViaHeader))
		mu.Unlock()
		if self.Arrived(r.Header.Values(egress.ViaHeader)) {
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
	served := egress.NewInstance()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if served.Arrived(r.Header.Values(egress.ViaHeader)) {
			w.WriteHeader(http.StatusLoopDetected)
			return
		}
		w.Header().Set(egress.ReachHeader, served.ReachOf(""))
		h.ServeHTTP(w, r)
	})
	self := egress.NewInstance()
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "other", Transport: sb.TransportStreamableHTTP, URL: ts.URL},
		upstream.Options{Instance: self})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := self.ReachOf("other"); !strings.Contains(got, served.ID()) {
		t.Errorf("after connecting, /mcp/other reaches %q; want the other Switchboard %s named", got, served.ID())
	}
}
