package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestPolicyOwnsItsConnectionPool: the sessions that hold one Policy
// share its connections, and another Policy (another allow-list, or the
// same one held by another caller) never gets one of them. The pool was a
// variable of the package, one per allow-list, shared by every caller.
func TestPolicyOwnsItsConnectionPool(t *testing.T) {
	var dialed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	get := func(p *Policy) {
		t.Helper()
		resp, err := (&http.Client{Transport: p.Transport()}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a, b := NewPolicy(nil), NewPolicy(nil)
	defer a.transport.CloseIdleConnections()
	defer b.transport.CloseIdleConnections()
	get(a)
	get(a)
	if n := dialed.Load(); n != 1 {
		t.Fatalf("two requests under one policy dialed %d connections; want 1, the second reusing the first", n)
	}
	get(b)
	if n := dialed.Load(); n != 2 {
		t.Fatalf("a request under another policy dialed %d connections in all; want 2: it must not reuse the first policy's", n)
	}
	if a.Transport() != a.Transport() {
		t.Error("a policy's Transport changes between calls: its sessions would not share connections")
	}
}
