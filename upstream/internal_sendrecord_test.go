package upstream

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// postThrough sends one POST of a call, recorded in sent, through a
// roundTripper over a transport whose connections dial makes, tied to
// linkCtx; it returns when the POST has ended.
func postThrough(t *testing.T, linkCtx context.Context, sent *sendRecord, dial func(context.Context, string, string) (net.Conn, error)) {
	t.Helper()
	base := &http.Transport{DialContext: dial}
	defer base.CloseIdleConnections()
	rt := &roundTripper{base: base, linkCtx: linkCtx}
	ctx := context.WithValue(context.Background(), sendRecordKey{}, sent)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := rt.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatal("the POST got an answer; the test wants none")
	}
}

// hangUp accepts one connection, reads one request from it and closes it
// unanswered: the request reached a server, which may have acted on it.
func hangUp(t *testing.T) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		http.ReadRequest(bufio.NewReader(conn))
	}()
	return ln.Addr().String()
}

// A POST still connecting when its link is closed (the event stream ended:
// the server is gone) never left, so the call was never posted and may wait
// for the next link; before, it counted as a POST without an answer, one
// that may have run.
func TestPOSTCutShortWhileConnectingWasNeverPosted(t *testing.T) {
	linkCtx, closeLink := context.WithCancel(context.Background())
	dialing := make(chan struct{})
	go func() { <-dialing; closeLink() }()
	sent := &sendRecord{ctx: context.Background()}
	postThrough(t, linkCtx, sent, func(ctx context.Context, _, _ string) (net.Conn, error) {
		close(dialing)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !sent.neverPosted() || !sent.neverRan(0) {
		t.Errorf("a POST cut short before it had a connection: neverPosted %v, neverRan %v; want both", sent.neverPosted(), sent.neverRan(0))
	}
	if sent.wasRefused(0) {
		t.Error("wasRefused: nothing refused it")
	}
}

// A POST refused a connection never left either, but it was posted: the
// refusal is the call's answer (the server is gone), not a reason to wait
// for the next link.
func TestRefusedPOSTWasPostedAndRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	sent := &sendRecord{ctx: context.Background()}
	postThrough(t, context.Background(), sent, func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	if sent.neverPosted() || !sent.wasRefused(0) || !sent.neverRan(0) {
		t.Errorf("a refused POST: neverPosted %v, wasRefused %v, neverRan %v; want false, true, true", sent.neverPosted(), sent.wasRefused(0), sent.neverRan(0))
	}
}

// A POST that had a connection may have reached the server, whatever
// became of the connection.
func TestPOSTThatHadAConnectionWasPosted(t *testing.T) {
	addr := hangUp(t)
	sent := &sendRecord{ctx: context.Background()}
	postThrough(t, context.Background(), sent, func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	if sent.neverPosted() || sent.neverRan(0) {
		t.Error("a POST sent on a connection that closed unanswered counts as never sent; it may have run")
	}
}

// A POST still connecting is not taken for one never sent: it may yet get
// its connection and leave while the call is retried on the next link.
// neverPosted waits for it, within closeTimeout, and past that it may have
// left.
func TestNeverPostedWaitsForAPOSTStillConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dialing, release := make(chan struct{}), make(chan struct{})
		sent := &sendRecord{ctx: context.Background()}
		posted := make(chan struct{})
		go func() {
			defer close(posted)
			postThrough(t, context.Background(), sent, func(ctx context.Context, _, _ string) (net.Conn, error) {
				close(dialing)
				<-release
				return nil, errors.New("released")
			})
		}()
		<-dialing
		if sent.neverPosted() {
			t.Error("neverPosted while the POST is still connecting = true, want false: it may get its connection yet")
		}
		close(release)
		<-posted
	})
}
