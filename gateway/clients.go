package gateway

import (
	"context"
	"crypto/rand"
	"net/netip"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/executor"
)

// This file keeps the downstream sessions: those that count against the
// session limits (sessions.go) until they end, and those it names.
//
// It names the downstream clients. Every tool call made on a
// downstream MCP session (Streamable HTTP, or the stdio of `switchboard
// stdio`) runs with that session's client id (executor.WithClient), so
// that a server whose session_scope is "per-client" serves it on an
// upstream session of the client's own (registry.Registry.ClientSession).
// When the downstream session ends, the client's upstream sessions are
// released (Source.ReleaseClient).
//
// A stateless request (protocol 2026-07-28 without a session) has no
// session to outlive it, and no server requests may be sent within it:
// it runs without a client id, on the shared session. So do the HTTP API's
// calls, which do not come through here.
//
// How the end of a downstream session is known: the gateway owns the
// Streamable HTTP sessions (endpoint.go), so it knows when it ends one
// (DELETE, the idle timeout, a revoked token, Close), and it sees their
// connections close, whatever closes them (closingTransport). A stdio
// session, named on its first call, gets a goroutine from then on that
// waits for its end (ServerSession.Wait): the gateway does not make its
// transport. Close ends every session it keeps, so that none of these
// goroutines outlives it.

// clients is the set of downstream sessions the gateway keeps: those
// counted against the session limits (sessions.go), from their initialize
// over Streamable HTTP, and those named for per-client sessions, from
// their first call.
type clients struct {
	maxLive, maxPerAddr, maxPerWho int // caps of the counted sessions; 0: none

	mu      sync.Mutex
	known   map[*mcp.ServerSession]*downstream
	taken   int                  // slots taken: counted sessions and pending admissions
	byAddr  map[addrWho]int      // the same, by client address and principal
	byWho   map[string]int       // the same, by principal
	live    int                  // counted sessions
	refused map[string]uint64    // refused sessions, by limit
	warned  map[string]time.Time // when a refusal by each limit was last logged
	expired uint64               // counted sessions ended by the idle timeout
	closed  bool                 // closeAll has run: no more sessions are kept

	waiting sync.WaitGroup // the goroutines waiting for stdio sessions' ends, and releasing clients
}

// downstream is one kept session.
type downstream struct {
	client  string // the client id of its calls; "" until its first call
	slot    addrWho
	reserve bool // it holds a slot (from reserve), counted or not yet
	counted bool // it is initialized: a live session
}

// addrWho is what the per-address cap counts a session under: its client's
// address and the principal that began it, so that one credential's
// sessions cannot lock another's out of an address they share (every local
// client comes from 127.0.0.1).
type addrWho struct {
	addr netip.Prefix
	who  string
}

func newClients(maxLive, maxPerAddr, maxPerWho int) *clients {
	return &clients{maxLive: maxLive, maxPerAddr: maxPerAddr, maxPerWho: maxPerWho,
		known:  make(map[*mcp.ServerSession]*downstream),
		byAddr: make(map[addrWho]int), byWho: make(map[string]int), refused: make(map[string]uint64), warned: make(map[string]time.Time)}
}

// statelessKey marks the context of a request served by the stateless
// handler (the go-sdk passes the request's context values on to the
// handlers of the session it makes for the request).
type statelessKey struct{}

// withClient returns ctx carrying the client id of the downstream session
// ss, naming the session on its first call; ctx unchanged for a stateless
// request. A session the gateway does not keep yet (a stdio one) is kept
// from then on, until it ends (release releases the client's upstream
// sessions then).
func (c *clients) withClient(ctx context.Context, ss *mcp.ServerSession, release func(string)) context.Context {
	if ss == nil || ctx.Value(statelessKey{}) != nil {
		return ctx
	}
	c.mu.Lock()
	d, kept := c.known[ss]
	if !kept && !c.closed {
		d = &downstream{}
		c.known[ss] = d
		c.waiting.Go(func() {
			ss.Wait()
			if id := c.ended(ss); id != "" {
				release(id)
			}
		})
	}
	if d == nil {
		c.mu.Unlock()
		return ctx
	}
	if d.client == "" {
		// Not the Mcp-Session-Id: that is a credential of the client's,
		// and this id goes into logs. A stdio session has none anyway.
		d.client = "client-" + rand.Text()[:12]
	}
	id := d.client
	c.mu.Unlock()
	return executor.WithClient(ctx, id)
}

// reserve takes a slot for a request of the principal who from addr that
// may create a session, or says which cap refuses it. The caps of this
// client are checked first: they are the ones it can do something about.
func (c *clients) reserve(addr netip.Prefix, who string) (addrWho, *refusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot := addrWho{addr, who}
	var ref *refusal
	switch {
	case c.maxPerAddr > 0 && addr.IsValid() && c.byAddr[slot] >= c.maxPerAddr:
		ref = &refusal{limit: LimitPerAddress, max: c.maxPerAddr, addr: addr, who: who}
	case c.maxPerWho > 0 && who != "" && c.byWho[who] >= c.maxPerWho:
		ref = &refusal{limit: LimitPerPrincipal, max: c.maxPerWho, addr: addr, who: who}
	case c.maxLive > 0 && c.taken >= c.maxLive:
		ref = &refusal{limit: LimitGlobal, max: c.maxLive, addr: addr, who: who}
	}
	if ref != nil {
		c.refused[ref.limit]++
		ref.total = c.refused[ref.limit]
		now := time.Now()
		if last, ok := c.warned[ref.limit]; !ok || now.Sub(last) >= refusalWarnEvery {
			c.warned[ref.limit], ref.warn = now, true
		}
		return slot, ref
	}
	c.take(slot)
	return slot, nil
}

func (c *clients) take(s addrWho) {
	c.taken++
	if s.addr.IsValid() {
		c.byAddr[s]++
	}
	if s.who != "" {
		c.byWho[s.who]++
	}
}

func (c *clients) free(s addrWho) {
	c.taken--
	if s.addr.IsValid() {
		if c.byAddr[s]--; c.byAddr[s] <= 0 {
			delete(c.byAddr, s)
		}
	}
	if s.who != "" {
		if c.byWho[s.who]--; c.byWho[s.who] <= 0 {
			delete(c.byWho, s.who)
		}
	}
}

// keep keeps the Streamable HTTP session ss, which holds the slot it was
// reserved, until connClosed is called. It reports false, and keeps nothing,
// once the gateway is closed.
func (c *clients) keep(ss *mcp.ServerSession, slot addrWho) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.known[ss] = &downstream{slot: slot, reserve: true}
	return true
}

// connClosed forgets the kept session ss, whose connection has closed,
// freeing its slot if it still holds one, and releases the client of its
// calls, if it was named, on a goroutine of its own (the caller is the
// go-sdk closing the connection), or at once once closeAll has begun.
func (c *clients) connClosed(ss *mcp.ServerSession, release func(string)) {
	c.mu.Lock()
	d := c.known[ss]
	if d == nil {
		c.mu.Unlock()
		return
	}
	c.uncountLocked(d, false)
	delete(c.known, ss)
	id, closing := d.client, c.closed
	if id != "" && !closing {
		c.waiting.Go(func() { release(id) })
	}
	c.mu.Unlock()
	if id != "" && closing {
		release(id)
	}
}

// admit counts the kept session ss as live: it is initialized.
func (c *clients) admit(ss *mcp.ServerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.known[ss]; d != nil && d.reserve && !d.counted {
		d.counted = true
		c.live++
	}
}

// uncount frees the slot of the kept session ss at once (it is ending); it
// stays kept until it has ended. expired says the idle timeout ended it.
func (c *clients) uncount(ss *mcp.ServerSession, expired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.known[ss]; d != nil {
		c.uncountLocked(d, expired)
	}
}

func (c *clients) uncountLocked(d *downstream, expired bool) {
	if !d.reserve {
		return
	}
	c.free(d.slot)
	d.reserve = false
	if d.counted {
		d.counted = false
		c.live--
		if expired {
			c.expired++
		}
	}
}

// ended forgets the stdio session ss, which has ended, and returns the
// client id of its calls.
func (c *clients) ended(ss *mcp.ServerSession) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.known[ss]
	if d == nil {
		return ""
	}
	delete(c.known, ss)
	return d.client
}

// closeAll ends every kept session and waits until each has ended and
// its client has been released; no session is kept after it.
func (c *clients) closeAll() {
	c.mu.Lock()
	c.closed = true
	sessions := make([]*mcp.ServerSession, 0, len(c.known))
	for ss := range c.known {
		sessions = append(sessions, ss)
	}
	c.mu.Unlock()
	var closing sync.WaitGroup
	for _, ss := range sessions {
		closing.Go(func() { ss.Close() })
	}
	closing.Wait()
	c.waiting.Wait()
}

func (c *clients) stats() SessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SessionStats{Live: c.live, MaxSessions: c.maxLive, MaxSessionsPerAddress: c.maxPerAddr, MaxSessionsPerPrincipal: c.maxPerWho,
		RefusedGlobal: c.refused[LimitGlobal], RefusedPerAddress: c.refused[LimitPerAddress],
		RefusedPerPrincipal: c.refused[LimitPerPrincipal], Expired: c.expired}
}
