package gateway

import (
	"context"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk sends a mirror's list_changed notifications itself, 10 ms
// after the last AddTool (or AddPrompt, AddResource, Remove...) that
// changed the list. A change of the mirrors is many such calls: one flush
// syncs every server that changed, each with its tools. A gateway thread
// stalled for longer than 10 ms in the middle of one (a loaded machine
// does that) let the notification go out half-way, and the rest followed
// as a second one: five servers starting together cost a client two or
// three list_changed, not one.
//
// So every change of the mirrors is a batch (Gateway.batch), and while
// one is in progress a mirror's server holds back its list_changed
// notifications (mirror.holdListChanged). When the last batch ends, a
// mirror whose server tried to send one is touched again
// (mirror.renotify): one of its items is added again, unchanged, which
// restarts the go-sdk's debounce. The go-sdk then sends one notification,
// 10 ms later, to the sessions it chooses then (subscriptions of the
// 2026-07-28 protocol included), whether or not another was pending.
// Nothing is lost: a notification held back is always followed by one
// sent.
//
// The go-sdk may also deliver a notification of the batch late: its timer
// fired during the batch, but its goroutine, stalled by a loaded machine
// (or run twice: a timer reset by the next AddTool after it fired runs
// again), reaches the hold only after the batch has ended. Sent as it
// comes, it was followed by the one renotify asks for: two for one
// change. So a session is told of a list once per change: the hold
// remembers, by list, the sessions told since the list last changed
// (mirror.tell), and a batch that changes the list forgets them
// (mirror.changed). A change is only ever made in a batch (or before
// there is a session), while nothing is sent, so the first notification a
// session gets after the batch comes after every change of it.

// The list_changed notifications, by the list they announce.
const (
	toolListChanged     = "notifications/tools/list_changed"
	promptListChanged   = "notifications/prompts/list_changed"
	resourceListChanged = "notifications/resources/list_changed"
)

// listChanged are the notifications a batch holds back.
var listChanged = map[string]bool{toolListChanged: true, promptListChanged: true, resourceListChanged: true}

// listHold is the gateway's batch state.
type listHold struct {
	mu     sync.Mutex
	active int                         // batches in progress
	held   map[*mirror]map[string]bool // the list_changed methods each mirror held back
}

// batch starts a change of the mirrors; the function it returns ends it.
// Batches nest and overlap: the hold ends with the last one.
func (g *Gateway) batch() (end func()) {
	h := &g.hold
	h.mu.Lock()
	h.active++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.active--
		var held map[*mirror]map[string]bool
		if h.active == 0 {
			held, h.held = h.held, nil
		}
		h.mu.Unlock()
		for m, methods := range held {
			for method := range methods {
				m.renotify(method)
			}
		}
	}
}

// pass reports whether m's server may send the notification method to
// the session of req now: not while a batch is in progress (it is held
// back, and remembered for the batch's end), nor to a session told of
// the list since it last changed.
func (h *listHold) pass(m *mirror, method string, req mcp.Request) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active == 0 {
		return m.tell(method, req)
	}
	if h.held == nil {
		h.held = make(map[*mirror]map[string]bool)
	}
	if h.held[m] == nil {
		h.held[m] = make(map[string]bool)
	}
	h.held[m][method] = true
	m.keepHeld(method, req)
	return false
}

// holdListChanged is the sending middleware of a mirror's server. It
// keeps the handler it wraps, to send a held notification itself when
// nothing is left to touch (see renotify).
func (m *mirror) holdListChanged(next mcp.MethodHandler) mcp.MethodHandler {
	m.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if listChanged[method] && !m.g.hold.pass(m, method, req) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// tell records that the session of req is told of the list that method
// announces, and reports whether it was not told since the list last
// changed. The sessions are held weakly: one that ends is forgotten with
// the next change. g.hold.mu is held.
func (m *mirror) tell(method string, req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return true
	}
	if m.told == nil {
		m.told = make(map[string]map[weak.Pointer[mcp.ServerSession]]bool)
	}
	told := m.told[method]
	if told == nil {
		told = make(map[weak.Pointer[mcp.ServerSession]]bool)
		m.told[method] = told
	}
	key := weak.Make(ss)
	if told[key] {
		return false
	}
	told[key] = true
	return true
}

// changed records that the lists that methods announce have changed, in
// the batch in progress: every session is to be told of them again.
func (m *mirror) changed(methods ...string) {
	m.g.hold.mu.Lock()
	defer m.g.hold.mu.Unlock()
	for _, method := range methods {
		delete(m.told, method)
	}
}

// keepHeld remembers a held notification for one session, in case
// renotify has nothing to touch. h.mu is held.
func (m *mirror) keepHeld(method string, req mcp.Request) {
	if m.heldReqs == nil {
		m.heldReqs = make(map[string]map[*mcp.ServerSession]mcp.Request)
	}
	if m.heldReqs[method] == nil {
		m.heldReqs[method] = make(map[*mcp.ServerSession]mcp.Request)
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		m.heldReqs[method][ss] = req
	}
}

// renotify has the go-sdk send the list_changed notification method once
// more, after a batch held it back: it adds one item of that list again,
// unchanged. A list left empty by the batch has nothing to add; then the
// held notifications are sent as they were, to the sessions not told yet
// (a batch begun since holds them again).
func (m *mirror) renotify(method string) {
	m.g.hold.mu.Lock()
	reqs := m.heldReqs[method]
	delete(m.heldReqs, method)
	m.g.hold.mu.Unlock()

	m.mu.Lock()
	touched := m.touch(method)
	m.mu.Unlock()
	if touched {
		return
	}
	for _, req := range reqs {
		if m.g.hold.pass(m, method, req) {
			m.send(context.Background(), method, req)
		}
	}
}

// touch adds one item of the list that method announces again, as it is
// shown; false if that list is empty. m.mu is held.
func (m *mirror) touch(method string) bool {
	for server, ex := range m.shown {
		switch method {
		case toolListChanged:
			for name, t := range ex.tools {
				return m.addTool(name, server, t) == nil
			}
		case promptListChanged:
			for name, p := range ex.prompts {
				m.addPrompt(name, server, p)
				return true
			}
		case resourceListChanged:
			for _, r := range ex.resources {
				m.server.AddResource(r, m.readResource(server))
				return true
			}
			for _, t := range ex.templates {
				m.server.AddResourceTemplate(t, m.readResource(server))
				return true
			}
		}
	}
	return false
}
