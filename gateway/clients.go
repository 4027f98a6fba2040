package gateway

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/executor"
)

// This file names the downstream clients. Every tool call made on a
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
// timeout) ends the session. Instead one goroutine, owned by the gateway,
// compares the sessions it has named with the sessions their mcp.Server
// still holds (the go-sdk drops a session from Server.Sessions when its
// connection is done): at once after a DELETE (a client that says
// goodbye), and every clientSweep while any is named (a session timed
// out, a stdio client gone).

// clientSweep is how often the gateway looks for named downstream sessions
// that have ended without a DELETE. A variable for the tests; New reads it
// once.
var clientSweep = 5 * time.Second

// clients is the set of named downstream sessions.
type clients struct {
	mu    sync.Mutex
	known map[*mcp.ServerSession]namedClient
	poke  chan struct{} // wakes the sweep (buffer 1)
}

type namedClient struct {
	id     string
	server *mcp.Server // the mirror's server that holds the session
}

func newClients() *clients {
	return &clients{known: make(map[*mcp.ServerSession]namedClient), poke: make(chan struct{}, 1)}
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
	nc, ok := c.known[ss]
	if !ok {
		// Not the Mcp-Session-Id: that is a credential of the client's,
		// and this id goes into logs. A stdio session has none anyway.
		nc = namedClient{id: "client-" + rand.Text()[:12], server: server}
		c.known[ss] = nc
	}
	c.mu.Unlock()
	if !ok {
		c.wake() // a session to watch: the sweep starts its timer
	}
	return executor.WithClient(ctx, nc.id)
}

func (c *clients) wake() {
	select {
	case c.poke <- struct{}{}:
	default: // a sweep is pending already
	}
}

// ended forgets the named sessions that have ended and returns their ids,
// and how many named sessions remain.
func (c *clients) ended() (ids []string, remain int) {
	c.mu.Lock()
	named := make(map[*mcp.ServerSession]namedClient, len(c.known))
	servers := make(map[*mcp.Server]bool)
	for ss, nc := range c.known {
		named[ss] = nc
		servers[nc.server] = true
	}
	c.mu.Unlock()
	// A session named before this snapshot was bound to its server before
	// it made the call that named it, so it is listed below unless it has
	// ended. Sessions named meanwhile are left for the next sweep.
	live := make(map[*mcp.ServerSession]bool)
	for srv := range servers {
		for ss := range srv.Sessions() {
			live[ss] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ss, nc := range named {
		if !live[ss] {
			delete(c.known, ss)
			ids = append(ids, nc.id)
		}
	}
	return ids, len(c.known)
}

// all forgets every named session and returns their ids.
func (c *clients) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.known))
	for _, nc := range c.known {
		ids = append(ids, nc.id)
	}
	clear(c.known)
	return ids
}

// watchClients releases the upstream sessions of every downstream client
// whose session has ended, until ctx ends; then those of every client
// still named, since nobody will watch them any more.
func (g *Gateway) watchClients(ctx context.Context, sweep time.Duration) {
	timer := time.NewTimer(sweep)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			g.release(g.clients.all())
			return
		case <-g.clients.poke:
		case <-timer.C:
		}
		ids, remain := g.clients.ended()
		g.release(ids)
		if remain > 0 {
			timer.Reset(sweep)
		} else {
			timer.Stop()
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
