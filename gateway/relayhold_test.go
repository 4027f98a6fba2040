package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// A relayed call longer than the session timeout keeps its session: the
// go-sdk's idle timer, which never sees relayed calls, is held paused
// while they are in flight, and restarts in full when they are done.
func TestRelayedCallLongerThanTheSessionTimeoutKeepsTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, do, id := relaySession(t)
		served := gateway.RelayServed(b.gw)
		// Two calls, each several timeouts long, overlapping, then one
		// more after the first two: the session outlives them all.
		call := func(ms int) answer {
			return do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":`+strconv.Itoa(ms)+`}}}`))
		}
		var wg sync.WaitGroup
		for _, ms := range []int{45_000, 30_000} {
			wg.Go(func() {
				if a := call(ms); a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) || strings.Contains(a.body, `"isError":true`) {
					t.Errorf("sleep %d ms: %d %s, want its result", ms, a.status, a.body)
				}
			})
			time.Sleep(5 * time.Second)
		}
		wg.Wait()
		if a := call(20_000); a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) {
			t.Errorf("a call after the long ones: %d %s, want its result", a.status, a.body)
		}
		if got := gateway.RelayServed(b.gw) - served; got != 3 {
			t.Errorf("the relay served %d calls, want 3", got)
		}
		if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)); a.status != http.StatusOK {
			t.Fatalf("the session ended under relayed calls: tools/list answered %d %s", a.status, a.body)
		}
		if st := b.gw.SessionStats(); st.Expired != 0 || st.Live != 1 {
			t.Errorf("session stats %+v, want one live session, none expired", st)
		}
		// Once idle, the session times out as any other: within a sweep
		// and a timeout of its last request.
		time.Sleep(time.Minute)
		if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)); a.status != http.StatusNotFound {
			t.Errorf("an idle session: tools/list answered %d, want 404", a.status)
		}
	})
}

// A session deleted while a relayed call is in flight ends at once: the
// hold does not keep it, the call still gets its result, and the session
// is gone for the next one.
func TestSessionDeletedDuringARelayedCallEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, do, id := relaySession(t)
		done := make(chan answer)
		go func() {
			done <- do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}}`))
		}()
		time.Sleep(5 * time.Second)
		if a := do(deleteSession("/mcp/s", id)); a.status != http.StatusNoContent {
			t.Fatalf("DELETE during the call: %d %s", a.status, a.body)
		}
		if st := b.gw.SessionStats(); st.Live != 0 {
			t.Errorf("%d live sessions after the DELETE, want 0", st.Live)
		}
		if a := <-done; a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) {
			t.Errorf("the call in flight: %d %s, want its result", a.status, a.body)
		}
		if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)); a.status != http.StatusNotFound {
			t.Errorf("a call after the DELETE: %d, want 404", a.status)
		}
	})
}

// relaySession starts, in the calling synctest bubble, a gateway with a
// session timeout of 10 s in front of one server s, and returns it, a way
// to send it requests, and the id of an initialized session on /mcp/s.
func relaySession(t *testing.T) (*bubble, doer, string) {
	t.Helper()
	cfgs, so := fleet(t, map[string]testserver.Script{"s": {}})
	b := newBubble(t, gateway.Options{SessionTimeout: 10 * time.Second}, so, nil, cfgs["s"])
	do := direct(b.gw.Handler(), "127.0.0.1:4000")
	time.Sleep(time.Second) // s is listed
	id := open(t, do, "/mcp/s")
	if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", a.status, a.body)
	}
	return b, do, id
}
