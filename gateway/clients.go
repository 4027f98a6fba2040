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

// This file watches the downstream sessions: those that count against the
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
// How the end of a downstream session is noticed: the go-sdk's close hook
// (ServerSessionOptions.onClose) is unexported, and ServerSession.Wait
// cannot be interrupted, so a goroutine per session blocked in it would
// outlive Gateway.Close until the client (or the Streamable HTTP session
// timeout) ends the session. Instead: a DELETE (a client that says
// goodbye) passes through the gateway's handler, which forgets its session
// at once; and one goroutine, owned by the gateway, compares the sessions
// it watches with the sessions their mcp.Server still holds (the go-sdk
// drops a session from Server.Sessions when its connection is done) every
// clientSweep while it watches any (a session timed out, a stdio client
// gone).

// clientSweep is how often the gateway looks for watched downstream
// sessions that have ended without a DELETE. A variable for the tests; New
// reads it once.
var clientSweep = 5 * time.Second

// clients is the set of downstream sessions the gateway watches: those
// counted against the session limits (sessions.go), from their initialize
// over Streamable HTTP, and those named for per-client sessions, from
// their first call.
type clients struct {
	maxLive, maxPerAddr, maxPerWho int // caps of the counted sessions; 0: none

	mu      sync.Mutex
	known   map[*mcp.ServerSession]*downstream
	byID    map[string]*downstream // the counted sessions, by Mcp-Session-Id
	taken   int                    // slots taken: counted sessions and pending admissions
	byAddr  map[addrWho]int        // the same, by client address and principal
	byWho   map[string]int         // the same, by principal
	live    int                    // counted sessions
	refused map[string]uint64      // refused sessions, by limit
	warned  map[string]time.Time   // when a refusal by each limit was last logged
	expired uint64                 // counted sessions ended by the idle timeout
	gone    []string               // client ids of named sessions ended by DELETE, to release
	poke    chan struct{}          // wakes the sweep (buffer 1)
	holding sync.WaitGroup         // the goroutines of the relay's holds (relayhold.go)
	closed  bool                   // all has run: no more holds
}

// downstream is one watched session.
type downstream struct {
	ss        *mcp.ServerSession
	server    *mcp.Server // the mirror's server that holds the session
	client    string      // the client id of its calls; "" until its first call
	counted   bool        // it holds a slot
	sessionID string      // its Mcp-Session-Id, while counted
	slot      addrWho     // its client's address and principal, while counted: only that principal may use it
	relaying  int         // relayed calls in flight (relay.go)
	hold      *hold       // keeps the go-sdk's idle timer paused for the relay (relayhold.go)
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
		known: make(map[*mcp.ServerSession]*downstream), byID: make(map[string]*downstream),
		byAddr: make(map[addrWho]int), byWho: make(map[string]int), refused: make(map[string]uint64), warned: make(map[string]time.Time),
		poke: make(chan struct{}, 1)}
}

// statelessKey marks the context of a request served by the stateless
// handler (the go-sdk passes the request's context values on to the
// handlers of the session it makes for the request).
type statelessKey struct{}

// withClient returns ctx carrying the client id of the downstream session
// ss of server, naming the session on its first call; ctx unchanged for a
// stateless request.
func (c *clients) withClient(ctx context.Context, ss *mcp.ServerSession, server *mcp.Server) context.Context {
	if ss == nil || ctx.Value(statelessKey{}) != nil {
		return ctx
	}
	c.mu.Lock()
	d, watched := c.known[ss]
	if !watched {
		d = &downstream{ss: ss, server: server}
		c.known[ss] = d
	}
	if d.client == "" {
		// Not the Mcp-Session-Id: that is a credential of the client's,
		// and this id goes into logs. A stdio session has none anyway.
		d.client = "client-" + rand.Text()[:12]
	}
	id := d.client
	c.mu.Unlock()
	if !watched {
		c.wake() // a session to watch: the sweep starts its timer
	}
	return executor.WithClient(ctx, id)
}

// reserve takes a slot for a request of the principal who from addr that
// may create a session, or says which cap refuses it. The caps of this
// client are checked first: they are the ones it can do something about.
func (c *clients) reserve(addr netip.Prefix, who string) (*admission, *refusal) {
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
		return nil, ref
	}
	c.take(slot)
	return &admission{slot: slot}, nil
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

// settle frees a's slot if its session was not initialized by the end of
// the request that took it.
func (c *clients) settle(a *admission) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if admissionState(a.state.Load()) == pending {
		a.state.Store(int32(abandoned))
		c.free(a.slot)
	}
}

// admit gives the initialized session ss of server the slot of a, and
// watches it until it ends. A session initialized after its request gave
// up the slot (the client went away during initialize) is counted all the
// same, over the caps if need be: it exists, and will end like any other.
func (c *clients) admit(a *admission, ss *mcp.ServerSession, server *mcp.Server) {
	c.mu.Lock()
	switch admissionState(a.state.Load()) {
	case admitted:
		c.mu.Unlock()
		return
	case abandoned:
		c.take(a.slot)
	}
	a.state.Store(int32(admitted))
	d, watched := c.known[ss]
	if !watched {
		d = &downstream{ss: ss, server: server}
		c.known[ss] = d
	}
	d.counted, d.sessionID, d.slot = true, ss.ID(), a.slot
	c.byID[d.sessionID] = d
	c.live++
	c.mu.Unlock()
	if !watched {
		c.wake()
	}
}

// uncount frees the slot of d, whose session has ended; c.mu is held.
func (c *clients) uncount(d *downstream) {
	if !d.counted {
		return
	}
	c.free(d.slot)
	c.live--
	delete(c.byID, d.sessionID)
	d.counted, d.sessionID = false, ""
}

// deleted frees at once the slot of the session whose DELETE the go-sdk
// has answered with 204 (it closes the session first), and queues its
// client id, if it was named, for the sweep to release.
func (c *clients) deleted(sessionID string) {
	c.mu.Lock()
	d := c.byID[sessionID]
	if d == nil {
		c.mu.Unlock()
		return
	}
	c.uncount(d)
	delete(c.known, d.ss)
	named := d.client != ""
	if named {
		c.gone = append(c.gone, d.client)
	}
	d.endHold()
	c.mu.Unlock()
	if named {
		c.wake()
	}
}

// takeGone returns the client ids queued by deleted.
func (c *clients) takeGone() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.gone
	c.gone = nil
	return ids
}

// watching reports whether any session is watched.
func (c *clients) watching() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.known) > 0
}

func (c *clients) wake() {
	select {
	case c.poke <- struct{}{}:
	default: // a sweep is pending already
	}
}

// ended forgets the watched sessions that have ended, freeing the slots of
// those still counted (ended by the idle timeout: a DELETE frees the slot
// at once), and returns the client ids of those named.
//
// Only the idle timeout closes a counted session otherwise: the go-sdk's
// Streamable HTTP handler closes one on DELETE, on its timer, and (in
// its tests) on closeAll; the keepalive that could also close one is not
// enabled (ServerOptions.KeepAlive). Were it enabled, Expired would count
// its closes too.
func (c *clients) ended() (ids []string) {
	c.mu.Lock()
	watched := make(map[*mcp.ServerSession]bool, len(c.known))
	servers := make(map[*mcp.Server]bool)
	for ss, d := range c.known {
		watched[ss] = true
		servers[d.server] = true
	}
	c.mu.Unlock()
	// A session watched before this snapshot was bound to its server before
	// it was initialized or made the call that named it, so it is listed
	// below unless it has ended. Sessions watched meanwhile are left for the
	// next sweep.
	live := make(map[*mcp.ServerSession]bool)
	for srv := range servers {
		for ss := range srv.Sessions() {
			live[ss] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ss := range watched {
		d := c.known[ss]
		if d == nil || live[ss] {
			continue // deleted meanwhile, or still there
		}
		delete(c.known, ss)
		if d.counted {
			c.uncount(d)
			c.expired++
		}
		if d.client != "" {
			ids = append(ids, d.client)
		}
		d.endHold()
	}
	return ids
}

// all forgets every watched session, releases the relay's holds, and
// returns the client ids of those named. The slots of counted sessions are
// not freed: nobody will watch them any more.
func (c *clients) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var ids []string
	for _, d := range c.known {
		if d.client != "" {
			ids = append(ids, d.client)
		}
		d.endHold()
	}
	clear(c.known)
	clear(c.byID)
	return ids
}

func (c *clients) stats() SessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SessionStats{Live: c.live, MaxSessions: c.maxLive, MaxSessionsPerAddress: c.maxPerAddr, MaxSessionsPerPrincipal: c.maxPerWho,
		RefusedGlobal: c.refused[LimitGlobal], RefusedPerAddress: c.refused[LimitPerAddress],
		RefusedPerPrincipal: c.refused[LimitPerPrincipal], Expired: c.expired}
}

// watchClients frees the slots of the counted sessions that have ended,
// and releases the upstream sessions of every named client whose session
// has ended, until ctx ends; then those of every client still named, since
// nobody will watch them any more. It looks at every watched session each
// sweep while there are any (a wake starts the timer), and releases the
// clients of sessions deleted at once. Each sweep also releases the
// relay's holds of sessions without relayed calls in flight.
func (g *Gateway) watchClients(ctx context.Context, sweep time.Duration) {
	timer := time.NewTimer(sweep)
	timer.Stop()
	defer timer.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			g.release(append(g.clients.takeGone(), g.clients.all()...))
			g.clients.holding.Wait()
			return
		case <-g.clients.poke:
			g.release(g.clients.takeGone())
		case <-timer.C:
			armed = false
			g.release(g.clients.ended())
			g.clients.releaseIdleHolds()
		}
		if !armed && g.clients.watching() {
			timer.Reset(sweep)
			armed = true
		}
	}
}

// release releases the upstream sessions of clients, concurrently, and
// returns when they have stopped.
func (g *Gateway) release(ids []string) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { g.src.ReleaseClient(id) })
	}
	wg.Wait()
}
