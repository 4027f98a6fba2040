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

// A session busy only with relayed calls, each longer than the session
// timeout, is not expired: the session's idle timer is paused while any
// of its POSTs is in flight, relayed calls included, and restarts in full
// when the last one ends. Once idle, the session ends exactly one timeout
// after its last call (its slot free then; no sweep notices it later),
// and its id is answered 404.
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
		if st := b.gw.SessionStats(); st.Expired != 0 || st.Live != 1 {
			t.Errorf("session stats %+v, want one live session, none expired", st)
		}
		// Idle from now: still there a moment before its timeout, gone
		// the moment after.
		time.Sleep(10*time.Second - time.Millisecond)
		synctest.Wait()
		if st := b.gw.SessionStats(); st.Expired != 0 || st.Live != 1 {
			t.Errorf("just before the timeout: session stats %+v, want one live session", st)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if st := b.gw.SessionStats(); st.Expired != 1 || st.Live != 0 {
			t.Errorf("just after the timeout: session stats %+v, want it expired", st)
		}
		if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)); a.status != http.StatusNotFound {
			t.Errorf("an expired session: tools/list answered %d, want 404", a.status)
		}
	})
}

// A session deleted while a relayed call is in flight ends at once: its
// slot is free for a new session before the DELETE is answered, the call
// still gets its result, and the session is gone for the next one.
func TestSessionDeletedDuringARelayedCallEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, do, id := relaySessionWith(t, gateway.Options{SessionTimeout: 10 * time.Second, MaxSessions: 1})
		done := make(chan answer)
		go func() {
			done <- do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}}`))
		}()
		time.Sleep(5 * time.Second)
		refused(t, do, "/mcp/s", http.StatusServiceUnavailable, gateway.LimitGlobal, 1)
		if a := do(deleteSession("/mcp/s", id)); a.status != http.StatusNoContent {
			t.Fatalf("DELETE during the call: %d %s", a.status, a.body)
		}
		if st := b.gw.SessionStats(); st.Live != 0 || st.Expired != 0 {
			t.Errorf("session stats %+v after the DELETE, want none live, none expired", st)
		}
		open(t, do, "/mcp/s") // the slot is free at once
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
	return relaySessionWith(t, gateway.Options{SessionTimeout: 10 * time.Second})
}

// relaySessionWith is relaySession with the gateway's options opts.
func relaySessionWith(t *testing.T, opts gateway.Options) (*bubble, doer, string) {
	t.Helper()
	cfgs, so := fleet(t, map[string]testserver.Script{"s": {}})
	b := newBubble(t, opts, so, nil, cfgs["s"])
	do := direct(b.gw.Handler(), "127.0.0.1:4000")
	time.Sleep(time.Second) // s is listed
	id := open(t, do, "/mcp/s")
	if a := do(mcpPost("/mcp/s", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", a.status, a.body)
	}
	return b, do, id
}

// The endpoint refuses what the go-sdk's handler refuses, with the same
// statuses, and a refused request leaves its session usable.
func TestEndpointRefusesWhatTheGoSDKRefuses(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{})
	do, url := direct(gw.Handler(), "192.0.2.1:4000"), "http://127.0.0.1/mcp"
	id := open(t, do, url)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	with := func(req *http.Request, header, value string) *http.Request {
		req.Header.Set(header, value)
		return req
	}
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		body   string // in the answer, if not ""
	}{
		{"unknown session", mcpPost(url, "no-such-session", ping), http.StatusNotFound, "session not found"},
		{"Content-Type", with(mcpPost(url, id, ping), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType, ""},
		{"Accept", with(mcpPost(url, id, ping), "Accept", "application/json"), http.StatusBadRequest, ""},
		{"unsupported version", with(mcpPost(url, id, ping), "Mcp-Protocol-Version", "1999-01-01"), http.StatusBadRequest, "Unsupported protocol version"},
		{"sessionless version on a session", with(mcpPost(url, id, ping), "Mcp-Protocol-Version", "2026-07-28"), http.StatusBadRequest, `"code":-32022`},
		{"batch", mcpPost(url, id, "["+ping+"]"), http.StatusBadRequest, "batching is not supported"},
		{"body over 4 MiB", mcpPost(url, id, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"`+strings.Repeat("x", 4<<20)+`"}}}`), http.StatusRequestEntityTooLarge, ""},
		{"Last-Event-ID on a POST", with(mcpPost(url, id, ping), "Last-Event-ID", "0_0"), http.StatusBadRequest, ""},
		{"GET without a session", with(with(mcpPost(url, "", ""), "Accept", "text/event-stream"), "X-Method", "GET"), http.StatusBadRequest, "GET requires an Mcp-Session-Id header"},
		{"DELETE without a session", deleteSession(url, ""), http.StatusBadRequest, "DELETE requires an Mcp-Session-Id header"},
		{"PUT", with(mcpPost(url, id, ping), "X-Method", http.MethodPut), http.StatusMethodNotAllowed, ""},
	} {
		if m := c.req.Header.Get("X-Method"); m != "" {
			c.req.Method = m
		}
		a := do(c.req)
		if a.status != c.status || !strings.Contains(a.body, c.body) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, a.status, a.body, c.status, c.body)
		}
	}
	usable(t, do, url, id)
}
