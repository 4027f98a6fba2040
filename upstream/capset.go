package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file keeps a server's capability-set sessions: one upstream session
// per set of client capabilities that 2026-07-28 clients declare, beside
// the server's own session, for servers of an older protocol.
//
// Why they exist: a server of 2025-11-25 or before learns what its client
// can do once, from initialize, and a go-sdk server refuses (-32021) or
// leaves out (an input request it does not make) what the session did not
// declare. The server's own session declares elicitation and sampling, so
// that a 2025-11-25 client's requests can be relayed; a 2026-07-28 client
// declares its capabilities with every request (SEP-2575) and must be
// refused what it did not declare. Told on its session that the client
// can sample when it cannot, the upstream runs what it must refuse; told
// it can elicit, it asks for elicitation and sampling at once (the go-sdk
// server fulfils an input request map with one goroutine each, and gives
// up on all when one fails), and whether the sampling request reaches the
// client before the refused elicitation cancels it is a race.
//
// What a session declares is a capSet, of the capabilities Switchboard
// relays: elicitation (form) and sampling. The server's own session has
// capDefault, the set most clients declare; over HTTP (Streamable or
// legacy SSE) a call whose client declares another set takes the session
// of that set, an MCP session more on the same server, made at its first
// call and shut down after capIdleTimeout unused. There are at most three
// (every other set), so nothing bounds them further. Like the server's own
// session, a set's session serves every principal whose calls declare
// that set: a server request is the call's that it names, or refused
// (serverrequest.go), and what one principal's call sets in a server's
// state is no more visible to another there than on the server's own.
//
// A stdio server is not split so: a process serves one MCP session
// (initialize is once per pipe), and a process per set would keep a state
// of its own apart from the process that serves the lists, resources and
// prompts (a tool call that adds a tool, or writes what a resource reads,
// would change another process than the one read). Its one session keeps
// declaring capDefault, and the call tells the server the client's
// capabilities in _meta as a 2026-07-28 request does (capHint): a server
// that reads a request's capabilities before its session's, as the
// go-sdk's does (ServerRequest.ClientCapabilities), follows the client's;
// one that reads only its session's asks, and Switchboard refuses the
// request in the client's name (the client did not declare it).

// capSet is the set of client capabilities an upstream session declares
// in initialize.
type capSet uint8

const (
	capElicit capSet = 1 << iota // elicitation, form mode
	capSample                    // sampling/createMessage

	// capDefault is what a server's own session declares: everything
	// Switchboard relays.
	capDefault = capElicit | capSample
)

// capIdleTimeout is how long a capability-set session may go unused
// before it is shut down, as for per-client sessions (the gateway's
// downstream session timeout).
const capIdleTimeout = 10 * time.Minute

// capSetOf returns the set of caps, a 2026-07-28 client's declared
// capabilities (a JSON object), and false if caps is not one: such a call
// takes the server's own session. Elicitation counts when its form mode
// does: declared with no mode (the spec's "{}" means form) or with form.
func capSetOf(caps json.RawMessage) (capSet, bool) {
	if caps = bytes.TrimSpace(caps); len(caps) == 0 || caps[0] != '{' {
		return 0, false
	}
	var c struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
			URL  json.RawMessage `json:"url"`
		} `json:"elicitation"`
		Sampling json.RawMessage `json:"sampling"`
	}
	if err := json.Unmarshal(caps, &c); err != nil {
		return 0, false
	}
	var set capSet
	if e := c.Elicitation; e != nil && (e.Form != nil || e.URL == nil) {
		set |= capElicit
	}
	if c.Sampling != nil && string(c.Sampling) != "null" {
		set |= capSample
	}
	return set, true
}

// capHint returns the _meta member that tells a server of an older
// protocol the capabilities of a 2026-07-28 client (the member its own
// requests carry), or nil if caps is not a JSON object.
func capHint(caps json.RawMessage) []byte {
	if _, ok := capSetOf(caps); !ok {
		return nil
	}
	b := make([]byte, 0, len(mcp.MetaKeyClientCapabilities)+3+len(caps))
	b = strconv.AppendQuote(b, mcp.MetaKeyClientCapabilities)
	b = append(b, ':')
	return append(b, caps...)
}

// capSession is one capability set's session of a server.
type capSession struct {
	s        *Session
	leases   int         // calls using s now; guarded by the owner's capMu
	lastUsed time.Time   // when the last lease ended; guarded likewise
	idle     *time.Timer // shuts s down after capIdleTimeout unused; nil while leased
}

// capSessions are a server's sessions by capability set (capset.go). The
// zero value is ready; its Session's runCtx ending closes it.
type capSessions struct {
	mu     sync.Mutex
	m      map[capSet]*capSession
	closed bool
}

// forInput returns the session that serves a call of in's client, and the
// function to call when the call has ended, if that is not s itself: in is
// a 2026-07-28 client's whose declared capabilities are not s's, and the
// server negotiated an older protocol. It waits for s to connect within
// wait, to learn the server's protocol; a session not connected by then
// serves the call itself (and fails it as unavailable).
func (s *Session) forInput(ctx context.Context, in *sb.InputRound, wait time.Duration) (*Session, func(), bool) {
	if in == nil || s.parent != nil || s.cfg.IsStdio() || s.opts.Dial != nil {
		// A byte stream carries one MCP session (capHint instead).
		return nil, nil, false
	}
	set, ok := capSetOf(in.Capabilities)
	if !ok || set == s.caps {
		return nil, nil, false
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	l, _, err := s.current(wctx, nil)
	cancel()
	if err != nil || l.version >= protocol20260728 {
		// A 2026-07-28 server is told each call's capabilities.
		return nil, nil, false
	}
	return s.capSessions.lease(s, set, l.version)
}

// lease returns set's session of s, made and started if there is none,
// leased for one call until done is called.
func (cs *capSessions) lease(s *Session, set capSet, version string) (*Session, func(), bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed || s.runCtx.Err() != nil {
		return nil, nil, false
	}
	c := cs.m[set]
	if c == nil {
		c = &capSession{s: s.newCapSession(set, version)}
		if cs.m == nil {
			cs.m = make(map[capSet]*capSession)
		}
		cs.m[set] = c
		c.s.launch()
		s.log.Info("capability-set session started", "capabilities", set.String(), "sessions", len(cs.m))
	}
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	c.leases++
	var once sync.Once
	return c.s, func() { once.Do(func() { cs.unlease(s, set, c) }) }, true
}

// unlease ends one call's use of c, and arms its idle timer if it was the
// last.
func (cs *capSessions) unlease(s *Session, set capSet, c *capSession) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c.leases--
	if c.leases > 0 || cs.m[set] != c {
		return
	}
	used := time.Now()
	c.lastUsed = used
	c.idle = time.AfterFunc(capIdleTimeout, func() {
		cs.mu.Lock()
		if cs.m[set] != c || c.leases > 0 || !c.lastUsed.Equal(used) {
			cs.mu.Unlock()
			return
		}
		delete(cs.m, set)
		cs.mu.Unlock()
		s.log.Info("capability-set session unused; stopping it", "capabilities", set.String(), "idle", capIdleTimeout)
		stopSession(c.s)
	})
}

// closeAll shuts down every session and refuses new ones, once s's own is
// shutting down; it returns when they have stopped.
func (cs *capSessions) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	stopping := make([]*Session, 0, len(cs.m))
	for set, c := range cs.m {
		if c.idle != nil {
			c.idle.Stop()
		}
		stopping = append(stopping, c.s)
		delete(cs.m, set)
	}
	cs.mu.Unlock()
	var wg sync.WaitGroup
	for _, sub := range stopping {
		wg.Go(func() { stopSession(sub) })
	}
	wg.Wait()
}

// dropAll shuts down every session, leaving new ones to be made: a
// Restart's, whose next calls connect anew.
func (cs *capSessions) dropAll() {
	cs.mu.Lock()
	var stopping []*Session
	for set, c := range cs.m {
		if c.leases > 0 {
			continue // never one serving a call; it ends with its calls
		}
		if c.idle != nil {
			c.idle.Stop()
		}
		stopping = append(stopping, c.s)
		delete(cs.m, set)
	}
	cs.mu.Unlock()
	for _, sub := range stopping {
		go stopSession(sub)
	}
}

// each calls fn with every session, under the lock: fn must not block.
func (cs *capSessions) each(fn func(*Session)) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.m {
		fn(c.s)
	}
}

// count returns how many sessions there are.
func (cs *capSessions) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}

func stopSession(s *Session) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		s.log.Warn("capability-set session did not stop", "error", err)
	}
}

// newCapSession returns s's unstarted session for set, pinned to version,
// the protocol s's server negotiated (no discovery probe). It publishes
// no events (the server's status is s's) but passes on the server's
// notifications as s does.
func (s *Session) newCapSession(set capSet, version string) *Session {
	cfg := s.cfg.Clone()
	cfg.ProtocolVersion = version
	o := s.opts
	o.OnEvent = nil
	o.Logger = s.log.With("capabilities", set.String())
	sub := New(cfg, &o)
	sub.log = o.Logger // New adds the server name, which s.log has already
	sub.caps, sub.parent = set, s
	sub.SetCallDefaults(time.Duration(s.callTimeout.Load()), time.Duration(s.maxTotalTimeout.Load()))
	return sub
}

// String names the set as logs show it.
func (c capSet) String() string {
	switch c {
	case 0:
		return "none"
	case capElicit:
		return "elicitation"
	case capSample:
		return "sampling"
	default:
		return "elicitation,sampling"
	}
}
