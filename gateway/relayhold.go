package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Relayed calls never reach the go-sdk's handler, whose idle timer ends a
// session SessionTimeout after the end of its last POST (the timer is
// paused while any POST of the session is in flight). A session busy with
// relayed calls alone, or with one call longer than the timeout, would
// time out under its client. So the relay keeps one POST of its own open
// in the go-sdk's handler while it relays calls of a session: a hold, a
// ping whose body is not sent until the hold is released. The go-sdk
// pauses the session's timer from the start of that POST to its end, as
// it does for its own requests, and restarts it in full when the hold is
// released.
//
// A session has at most one hold, taken by the first relayed call that
// finds none, and released by the sweep of clients.go once no relayed
// call of the session is in flight (so that a client making calls one
// after another costs one hold per sweep, not one per call); at once when
// the session is deleted; and when the gateway closes. A session's idle
// timeout therefore counts from at most one clientSweep after its last
// relayed call. The go-sdk answers the hold's POST as any other (Host
// check, session lookup, principal): a hold it refuses, before it reads
// the body, means the session cannot be relayed, and the go-sdk answers
// the call itself.

// hold is one session's open POST.
type hold struct {
	started chan struct{} // closed when the go-sdk reads the body: it took the POST
	release chan struct{} // closed to send the body
	done    chan struct{} // closed when the go-sdk has answered
	once    sync.Once     // closes release
}

// holdPing is the body of a hold's POST.
const holdPing = `{"jsonrpc":"2.0","id":"switchboard-hold","method":"ping"}`

// startHold opens a hold on the session of r in stateful, the go-sdk's
// handler, on a goroutine of wg. The hold's request carries r's values
// (the principal, the connection's addresses) and headers, not its
// cancellation: it outlives r.
func startHold(wg *sync.WaitGroup, stateful http.Handler, r *http.Request) *hold {
	h := &hold{started: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, r.URL.String(), &heldBody{h: h, body: strings.NewReader(holdPing)})
	if err != nil {
		close(h.done)
		return h
	}
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Accept", "Content-Type"} {
		req.Header.Set(k, r.Header.Get(k))
	}
	wg.Go(func() {
		defer close(h.done)
		stateful.ServeHTTP(discard{}, req)
	})
	return h
}

// taken waits until the go-sdk has taken the hold's POST, or refused it,
// and reports whether it took it.
func (h *hold) taken() bool {
	select {
	case <-h.started:
		return true
	case <-h.done:
		return false
	}
}

// end releases the hold; the go-sdk then answers the ping and restarts
// the session's timer. It may be called more than once.
func (h *hold) end() { h.once.Do(func() { close(h.release) }) }

// heldBody is the body of a hold's POST: its first read signals that the
// go-sdk has taken the POST (it reads the body once it has found the
// session and paused its timer), and waits for the release.
type heldBody struct {
	h     *hold
	body  io.Reader
	first sync.Once
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.first.Do(func() { close(b.h.started) })
	<-b.h.release
	return b.body.Read(p)
}

// beginRelay counts a relayed call of d's session and makes sure a hold
// keeps the session alive; it reports whether the session is live (the
// go-sdk took the hold). If it is not, nothing is counted, and the go-sdk
// answers the call (404 for a session that has ended).
func (g *Gateway) beginRelay(stateful http.Handler, r *http.Request, d *downstream) bool {
	c := g.clients
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	h := d.hold
	if h == nil {
		h = startHold(&c.holding, stateful, r)
		d.hold = h
	}
	d.relaying++
	c.mu.Unlock()
	if h.taken() {
		return true
	}
	c.mu.Lock()
	d.relaying--
	if d.hold == h {
		d.hold = nil
	}
	c.mu.Unlock()
	h.end()
	return false
}

// endRelay uncounts a relayed call of d's session; its hold stays until
// the sweep.
func (c *clients) endRelay(d *downstream) {
	c.mu.Lock()
	d.relaying--
	c.mu.Unlock()
}

// endHold releases the hold of d's session, if it has one; the clients'
// mu is held.
func (d *downstream) endHold() {
	if d.hold != nil {
		d.hold.end()
		d.hold = nil
	}
}

// releaseIdleHolds releases the holds of the sessions without relayed
// calls in flight.
func (c *clients) releaseIdleHolds() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.known {
		if d.relaying == 0 {
			d.endHold()
		}
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
func (discard) Flush()                      {}
