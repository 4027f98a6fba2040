package registry

import (
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// This file keeps the per-client sessions of servers whose session_scope is
// "per-client": one upstream session per downstream client, beside the
// server's shared session.
//
// Why they exist: a server's elicitation or sampling request does not say
// which tool call it belongs to. Over Streamable HTTP the stream that
// carries it does (upstream/serverrequest.go); over stdio and legacy SSE
// nothing does, so when two callers that can answer have calls in flight
// on one session, the session refuses the request rather than ask the
// wrong person. A client with a session (a process, for stdio) of its own
// is never in that position.
//
// The shared session keeps serving everything that is not a tool call
// (the lists, resources, prompts, completion, health, the server's
// status); per-client sessions serve tool calls only. They publish no
// events: a server's status is its shared session's.

// Defaults for the per-client Options fields.
const (
	// DefaultMaxClientSessions caps the per-client sessions of one server:
	// for stdio, that many processes.
	DefaultMaxClientSessions = 64
	// DefaultClientIdleTimeout is how long a per-client session may go
	// unused before it is shut down. It matches the gateway's default
	// downstream session timeout (10 min): under the defaults a client that
	// is still connected keeps its process until the gateway would time it
	// out anyway, and a client whose end goes unnoticed costs a process for
	// that long at most.
	DefaultClientIdleTimeout = 10 * time.Minute
)

// ErrTooManyClients is wrapped by ClientSession's error when a server has
// as many per-client sessions as Options.MaxClientSessions allows and one
// more client calls it. Nothing is sent; the call fails as unavailable.
var ErrTooManyClients = sb.NewError(sb.CodeUnavailable, "too many per-client sessions")

// clientSession is one client's session of a per-client server.
type clientSession struct {
	s        *upstream.Session
	leases   int       // calls using s now; guarded by the entry's mu
	lastUsed time.Time // when the last lease ended, or s was created; guarded likewise
}

// ClientSession returns the session that serves client's tool calls to
// server name, and done, which the caller must call when the call has
// ended: a session is never reaped while it serves a call (a person may be
// answering its elicitation).
//
// For a server whose session_scope is "per-client" and a non-empty client,
// that is the session dedicated to client, created and started on first
// use with the options the shared session has; ClientSession does not wait
// for it to connect (upstream.Session.CallTool waits within the call's
// timeout). Otherwise it is the shared session (see Session).
//
// Errors: sb.ErrNotFound for an unknown (or just deleted) server,
// ErrDisabled for a disabled one, ErrClosed after Shutdown, and
// ErrTooManyClients when the server has MaxClientSessions per-client
// sessions already.
func (r *Registry) ClientSession(name, client string) (s *upstream.Session, done func(), err error) {
	e, err := r.get(name)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.gone:
		return nil, nil, fmt.Errorf("%w: %q", sb.ErrNotFound, name)
	case e.session == nil:
		return nil, nil, fmt.Errorf("%w: %q", ErrDisabled, name)
	case client == "" || e.stored.Config.SessionScope != sb.SessionPerClient:
		return e.session, func() {}, nil
	}
	// Read under e.mu: Shutdown marks the registry closed before it takes
	// each entry's sessions, so a session made here is either refused or
	// seen by Shutdown.
	r.mu.RLock()
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		return nil, nil, ErrClosed
	}
	c := e.clients[client]
	if c == nil {
		if n := len(e.clients); n >= r.opts.MaxClientSessions {
			return nil, nil, fmt.Errorf("%w: %q serves %d clients with a session each, its limit; a client's session ends when it disconnects or after %s unused",
				ErrTooManyClients, name, n, r.opts.ClientIdleTimeout)
		}
		c = &clientSession{s: r.newClientSession(&e.stored.Config, client), lastUsed: time.Now()}
		if e.clients == nil {
			e.clients = make(map[string]*clientSession)
		}
		e.clients[client] = c
		r.startAsync(c.s)
		r.reaperOnce.Do(func() { r.wg.Go(r.reap) })
		r.log.Info("per-client session started", "server", name, "client", client, "sessions", len(e.clients))
	}
	c.leases++
	var once sync.Once
	return c.s, func() { once.Do(func() { r.unlease(e, c) }) }, nil
}

// newClientSession returns an unstarted session of cfg for client.
func (r *Registry) newClientSession(cfg *sb.ServerConfig, client string) *upstream.Session {
	o := r.opts.Session
	o.Logger = r.log.With("client", client)
	o.OnEvent = nil // the server's status is its shared session's
	o.OnNotification = func(server string, p mcp.Params) { r.notes.publish(upstream.Notification{Server: server, Params: p}) }
	return upstream.New(cfg, &o)
}

// unlease ends one call's use of c.
func (r *Registry) unlease(e *entry, c *clientSession) {
	e.mu.Lock()
	c.leases--
	c.lastUsed = time.Now()
	e.mu.Unlock()
	select {
	case r.reapWake <- struct{}{}:
	default: // a wake is pending already
	}
}

// ReleaseClient shuts down every per-client session of client, on every
// server, and returns when they have stopped. The gateway calls it when a
// downstream session ends.
func (r *Registry) ReleaseClient(client string) {
	var stopping []*upstream.Session
	for _, e := range r.entries() {
		e.mu.Lock()
		if c := e.clients[client]; c != nil {
			delete(e.clients, client)
			stopping = append(stopping, c.s)
		}
		e.mu.Unlock()
	}
	if len(stopping) > 0 {
		r.log.Info("client gone; stopping its per-client sessions", "client", client, "sessions", len(stopping))
		r.stopAll(stopping)
	}
}

// takeClients detaches every per-client session of e and returns them;
// e.mu is held.
func takeClients(e *entry) []*upstream.Session {
	var ss []*upstream.Session
	for _, c := range e.clients {
		ss = append(ss, c.s)
	}
	e.clients = nil
	return ss
}

// stopClients stops every per-client session of e; e.mu is held.
func (r *Registry) stopClients(e *entry) {
	if ss := takeClients(e); len(ss) > 0 {
		r.log.Info("stopping per-client sessions", "server", e.stored.Config.Name, "sessions", len(ss))
		r.stopAll(ss)
	}
}

// stopAll stops sessions concurrently and returns when every one has.
func (r *Registry) stopAll(sessions []*upstream.Session) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { r.stop(s) })
	}
	wg.Wait()
}

// entries returns a snapshot of the entries, to be locked one by one after
// r.mu is released (the lock order is entry, then registry).
func (r *Registry) entries() []*entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*entry, 0, len(r.servers))
	for _, e := range r.servers {
		out = append(out, e)
	}
	return out
}

// reap shuts down the per-client sessions that no call has used for
// ClientIdleTimeout, until Shutdown. It runs from the first per-client
// session on, and sleeps until the next session can fall idle or a call
// ends.
func (r *Registry) reap() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var due <-chan time.Time
		if next := r.reapIdle(time.Now()); !next.IsZero() {
			timer.Reset(time.Until(next))
			due = timer.C
		}
		select {
		case <-r.reapCtx.Done():
			return
		case <-r.reapWake:
		case <-due:
		}
		timer.Stop()
	}
}

// reapIdle shuts down the per-client sessions idle for ClientIdleTimeout
// at now, and returns when the next of the others falls idle that long
// (zero if none can: each is serving a call, or there are none).
func (r *Registry) reapIdle(now time.Time) (next time.Time) {
	idle := r.opts.ClientIdleTimeout
	var stopping []*upstream.Session
	for _, e := range r.entries() {
		e.mu.Lock()
		for client, c := range e.clients {
			if c.leases > 0 {
				continue
			}
			if at := c.lastUsed.Add(idle); now.Before(at) {
				if next.IsZero() || at.Before(next) {
					next = at
				}
				continue
			}
			delete(e.clients, client)
			stopping = append(stopping, c.s)
			r.log.Info("per-client session unused; stopping it", "server", e.stored.Config.Name, "client", client, "idle", idle)
		}
		e.mu.Unlock()
	}
	r.stopAll(stopping)
	return next
}
