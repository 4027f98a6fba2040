// Package gateway serves the upstream servers to MCP clients: an aggregated
// server (every server's tools and prompts under "<server>__<name>",
// resources under their own URIs) and one server per upstream with names
// unchanged. The mirrored lists follow the upstream sessions (a server that
// drops leaves the list, and comes back, with list_changed sent
// downstream), and calls pass through whole: progress, cancellation,
// elicitation, sampling, logging, resources, prompts and completion. The
// gateway serves Streamable HTTP with a handler of its own that owns the
// session table (endpoint.go), each session a go-sdk transport its mirror's
// server is connected over. The hot request, tools/call on /mcp,
// /mcp/{name} and the toolset endpoints, is answered as bytes where it can
// be, on stateful sessions (relay.go; the upstream's elicitation and
// sampling requests carried to the client on the call's stream:
// relay_requests.go) and in the stateless 2026-07-28 mode
// (relay_stateless.go, for clients that declare neither elicitation nor
// sampling); everything else goes through the go-sdk's server.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Source is where the gateway finds servers and learns of their changes;
// the registry implements it.
type Source interface {
	Names() []string
	Session(name string) (*upstream.Session, bool)
	Subscribe() (<-chan sb.Event, func())
	SubscribeNotifications() (<-chan upstream.Notification, func())
	// WaitSettled waits until the first connection attempt of every
	// enabled server in names (every one if none) has had an outcome, for
	// none beyond limit after it was started (see
	// registry.Registry.WaitSettled).
	WaitSettled(ctx context.Context, limit time.Duration, names ...string) error
	// MaxTotalTimeout is a server's max_total_timeout_ms, zero if unset.
	MaxTotalTimeout(name string) time.Duration
	// ReleaseClient shuts down the upstream sessions kept for one
	// downstream client (session_scope "per-client"), once its downstream
	// session has ended.
	ReleaseClient(client string)
}

// Options configure a Gateway. Executor is required.
type Options struct {
	// Executor runs the calls (so that they are measured like every other).
	Executor *executor.Executor
	Logger   *slog.Logger
	// Version is reported in serverInfo.
	Version string
	// ResyncInterval is how often every mirror is checked against the
	// sessions, beside the events that keep them in step. If zero,
	// DefaultResyncInterval is used.
	ResyncInterval time.Duration
	// SessionTimeout closes downstream Streamable HTTP sessions idle this
	// long: counted from the end of the client's last POST, relayed calls
	// included (the timer runs while a GET stream is open). If zero,
	// DefaultSessionTimeout is used.
	SessionTimeout time.Duration
	// MaxSessions caps the live downstream Streamable HTTP sessions of
	// every endpoint (/mcp and /mcp/NAME) together. A session counts from
	// its successful initialize until it ends (DELETE, SessionTimeout). A
	// new session over the cap is refused with HTTP 503 and a JSON-RPC
	// error whose data names the limit ("global") and its value; the
	// sessions that exist are unaffected. If zero, DefaultMaxSessions is
	// used; if negative, there is no cap.
	MaxSessions int
	// MaxSessionsPerAddress caps the live sessions one principal (a
	// credential) holds from one client address: the remote IP of the
	// connection (an IPv6 address counts by its /64). Each principal has
	// its own share of an address, so that one credential cannot lock the
	// others out of it (every local client shares 127.0.0.1); clients of a
	// daemon that asks for no credential share one. A new session over it
	// is refused with HTTP 429 (limit "per_address"). No header is believed, X-Forwarded-For included:
	// behind a reverse proxy every client has the proxy's address, and this
	// cap is the proxy's; raise it or turn it off there. If zero,
	// DefaultMaxSessionsPerAddress is used; if negative, there is no cap.
	MaxSessionsPerAddress int
	// MaxSessionsPerPrincipal caps the live sessions of one principal
	// from every address together (a client may take any address of
	// 127.0.0.0/8). A new session over it is refused with HTTP 429 (limit
	// "per_principal"). It does not apply on a daemon that asks for no
	// credential. If zero, DefaultMaxSessionsPerPrincipal is used; if
	// negative, there is no cap.
	MaxSessionsPerPrincipal int
	// ReadyTimeout is how long a server that is making its first
	// connection attempt may keep clients waiting, counted from when the
	// server was started. A request that needs the lists (tools/list,
	// prompts/list, resources/list, resources/templates/list, or a call,
	// prompts/get or resources/read of a name not listed yet) is answered
	// once every server it can see has connected or failed an attempt, or
	// has been starting for ReadyTimeout; meanwhile list_changed
	// notifications are held, so that servers starting together reach each
	// client as one. If zero, DefaultReadyTimeout is used; if negative,
	// nothing waits.
	ReadyTimeout time.Duration
	// MaxTotalTimeout caps a tool call through the gateway, progress or
	// not, for a server whose config sets no max_total_timeout_ms (a
	// server's own setting applies as it is). If zero,
	// DefaultMaxTotalTimeout is used; if negative, there is no cap. It is
	// at most sb.MaxInvokeTimeout.
	MaxTotalTimeout time.Duration
	// Toolsets, if set, are served by ToolsetHandler (toolset.go).
	Toolsets ToolsetSource
	// MCPMode is how the aggregate (/mcp, and Aggregate over stdio) shows
	// the tools: sb.ModeCatalog (or empty) lists them all; sb.ModeSearch
	// lists search_tools and call_tool instead (search.go). The
	// per-server endpoints list their tools in either mode.
	MCPMode string
	// TaskKey is the key of the MACs in the task ids the gateway gives
	// (tasks.go): gateways given the same key (replicas of one store, a
	// restarted daemon) accept each other's ids. If nil, a random key is
	// made at start, and no id given before it is known.
	TaskKey []byte
	// Audit, if set, records the resources/read and prompts/get the
	// gateway serves, and the surface of every call (audit.go); tools/call
	// is recorded by the executor's plugin (audit.Log.Instrument).
	Audit *audit.Log
}

// Defaults for Options.
const (
	DefaultResyncInterval = 30 * time.Second
	// DefaultSessionTimeout ends a session its client has left unused for
	// 10 minutes. An idle session holds some 15 KB; clients that leave
	// without a DELETE (scripts, crashed IDEs) are the ones that pile them
	// up, and a timeout a third as long keeps a third as many. A client
	// that comes back after it gets 404 and, as the spec requires of it,
	// initializes a new session; a client that wants to keep one across
	// long pauses pings.
	DefaultSessionTimeout = 10 * time.Minute
	// DefaultMaxSessions bounds what idle sessions can hold to some 150 MB
	// (at 15 KB each), far more sessions than a team's clients open.
	DefaultMaxSessions = 10_000
	// DefaultMaxSessionsPerAddress leaves a host room for every IDE window,
	// agent and script it runs (each holds one session per endpoint it
	// uses), while no one address can take more than 1/40 of the global
	// cap.
	DefaultMaxSessionsPerAddress = 256
	// DefaultMaxSessionsPerPrincipal lets a credential be used from a few
	// hosts at their full share, while no one credential can take more
	// than a tenth of the global cap.
	DefaultMaxSessionsPerPrincipal = 1024
	// DefaultReadyTimeout covers a server that starts from a warm cache
	// (npx, uvx, docker: a few seconds) and stays well within the request
	// timeouts of MCP clients (60 s in the TypeScript SDK): a slower server
	// is announced by list_changed when it connects.
	DefaultReadyTimeout = 10 * time.Second
	// DefaultMaxTotalTimeout is long for a tool call and short for a tool
	// that reports progress forever.
	DefaultMaxTotalTimeout = 10 * time.Minute
)

// Gateway mirrors upstream servers as MCP servers. Create it with New and
// Close it when done.
type Gateway struct {
	src  Source
	ex   *executor.Executor
	log  *slog.Logger
	opts Options

	agg  *mirror
	hold listHold // holds the mirrors' list_changed during a change (listhold.go)

	mu   sync.Mutex
	per  map[string]*mirror
	sets map[string]*mirror // by toolset (toolset.go)

	clients *clients      // the downstream sessions (clients.go)
	served  atomic.Int64  // tools/call requests the relay answered (relay.go)
	asked   atomic.Uint64 // numbers the gateway's requests to clients (relay_requests.go)
	held    heldTable     // 2026-07-28 clients' calls waiting for their input (bridge.go)
	taskKey []byte        // the key of the MACs of namespaced task ids (tasks.go)

	cancel context.CancelFunc
	done   chan struct{} // closed when follow and followToolsets have returned
	// inStep takes the waits of WaitInStep to follow.
	inStep chan chan struct{}
}

// New returns a gateway over src, already in step with it.
func New(src Source, opts Options) *Gateway {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	opts.MaxSessions = capOrDefault(opts.MaxSessions, DefaultMaxSessions)
	opts.MaxSessionsPerAddress = capOrDefault(opts.MaxSessionsPerAddress, DefaultMaxSessionsPerAddress)
	opts.MaxSessionsPerPrincipal = capOrDefault(opts.MaxSessionsPerPrincipal, DefaultMaxSessionsPerPrincipal)
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.MaxTotalTimeout == 0 {
		opts.MaxTotalTimeout = DefaultMaxTotalTimeout
	}
	opts.MaxTotalTimeout = min(opts.MaxTotalTimeout, sb.MaxInvokeTimeout)
	g := &Gateway{src: src, ex: opts.Executor, log: opts.Logger, opts: opts, per: make(map[string]*mirror),
		clients: newClients(opts.MaxSessions, opts.MaxSessionsPerAddress, opts.MaxSessionsPerPrincipal), done: make(chan struct{}),
		inStep: make(chan chan struct{}), taskKey: opts.TaskKey}
	if g.taskKey == nil {
		g.taskKey = newTaskKey()
	}
	g.agg = g.newMirror("")
	g.agg.setSearch(opts.MCPMode == sb.ModeSearch)
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	events, stopEvents := src.Subscribe()
	notes, stopNotes := src.SubscribeNotifications()
	for _, name := range src.Names() {
		g.agg.sync(name)
	}
	var running sync.WaitGroup
	running.Go(func() {
		defer stopEvents()
		defer stopNotes()
		g.follow(ctx, events, notes)
	})
	if opts.Toolsets != nil {
		running.Go(func() { g.followToolsets(ctx) })
	}
	go func() {
		running.Wait()
		close(g.done)
	}()
	return g
}

// capOrDefault is the cap an Options field asks for: def if zero, none (0) if
// negative.
func capOrDefault(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// Close stops following the sources, ends every downstream session it
// keeps (the Streamable HTTP ones, and the stdio ones that made a call),
// releases the per-client upstream sessions of their clients, and cancels
// the calls held for their clients' input (bridge.go).
func (g *Gateway) Close() {
	g.cancel()
	<-g.done
	g.held.closeAll()
	g.clients.closeAll()
}

// WaitInStep waits until every server there is at the call has had the
// outcome of its first connection attempt (or has been starting for
// ReadyTimeout), and the mirrors show every server as it is then: the work
// of copying the servers' tools, prompts and resources is done. A daemon
// returns its start-up garbage to the OS then, not before. It fails if ctx
// ends or the gateway is closed first.
func (g *Gateway) WaitInStep(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case g.inStep <- done:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.done:
		return errGatewayClosed
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-g.done:
		return errGatewayClosed
	}
}

// errGatewayClosed is WaitInStep's error once the gateway is closed.
var errGatewayClosed = errors.New("gateway: closed")

// Aggregate returns the aggregated server, for serving over stdio.
func (g *Gateway) Aggregate() *mcp.Server { return g.agg.server }

// changeWindow is how long the gateway collects the servers' changes
// before it applies them to the mirrors, so that a burst (servers created
// together, an upstream outage) reaches each client as one list_changed.
// The go-sdk's own debounce (10 ms) only joins changes made together.
const changeWindow = 200 * time.Millisecond

// follow keeps the mirrors in step with the servers' events, relays their
// notifications, and resyncs everything periodically in case an event was
// missed.
//
// Changes are applied when the change window closes, and not while servers
// are making their first connection attempt (within ReadyTimeout): N
// servers starting together then cost each client one list_changed, not N.
func (g *Gateway) follow(ctx context.Context, events <-chan sb.Event, notes <-chan upstream.Notification) {
	tick := time.NewTicker(g.opts.ResyncInterval)
	defer tick.Stop()
	window := time.NewTimer(changeWindow)
	window.Stop()
	defer window.Stop()
	var holds sync.WaitGroup
	defer holds.Wait()

	pending := make(map[string]bool) // servers changed since the last flush
	all := false                     // sync every server at the next flush
	windowOpen := false
	var settled chan struct{} // non-nil while holding for first attempts
	var waits []chan struct{} // of WaitInStep, closed by the next flush
	// hold holds the changes until the first attempts of every server
	// there is now have ended. A hold in progress takes in the servers
	// added while it lasts (WaitSettled looks again after each wait), so a
	// starting event needs no new one. renew starts a new one all the same,
	// for what must cover every server there is now: the hold in progress
	// may have looked for the last time before the newest were added, and
	// be over without follow having seen it yet.
	hold := func(renew bool) {
		if (settled != nil && !renew) || g.opts.ReadyTimeout < 0 {
			return
		}
		ch := make(chan struct{})
		settled = ch
		holds.Go(func() {
			defer close(ch)
			g.src.WaitSettled(ctx, g.opts.ReadyTimeout) // nil, or ctx ended and so does follow
		})
	}
	flush := func() {
		defer g.batch()()
		servers := slices.Collect(maps.Keys(pending))
		if all {
			servers = g.src.Names()
		}
		for _, server := range servers {
			g.syncServer(server)
		}
		clear(pending)
		all = false
		window.Stop()
		windowOpen = false
		for _, w := range waits {
			close(w)
		}
		waits = nil
	}

	hold(false)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch ev.Reason {
			case sb.ReasonStarting:
				// Nothing changed that a client can see; but a new session
				// may be starting, whose first attempt the lists wait for.
				// (Reconnects and restarts start at attempt 0 too; the
				// wait passes them at once. Retries need no look.)
				if ev.Attempt == 0 {
					hold(false)
				}
			case sb.ReasonDeleted:
				g.syncServer(ev.Server)
				g.mu.Lock()
				delete(g.per, ev.Server) // its clients get 404 from now on
				g.mu.Unlock()
			default:
				pending[ev.Server] = true
				if !windowOpen {
					window.Reset(changeWindow)
					windowOpen = true
				}
			}
		case <-window.C:
			windowOpen = false
			if settled == nil {
				flush()
			}
		case <-settled:
			// Every server, not only those whose events came in: the
			// event of the last outcome may still be on its way, and
			// would cost a second list_changed. An open window still
			// gathers the rest of a burst (a hold that ends at once, for
			// reconnects after an outage, must not cut it short), unless
			// WaitInStep is waiting: it is owed the mirrors in step now.
			settled, all = nil, true
			if !windowOpen || len(waits) > 0 {
				flush()
			}
		case n, ok := <-notes:
			if !ok {
				return
			}
			g.relay(ctx, n)
		case w := <-g.inStep:
			// Every server, as for the end of a hold, once the first
			// attempts of the servers there are now have ended. Their
			// starting events are no sign of them: Load returns before its
			// sessions have sent them, and they may still be queued here
			// behind this wait. So a new hold, which ends at once if no
			// first attempt is pending.
			waits, all = append(waits, w), true
			hold(true)
			if settled == nil {
				flush()
			}
		case <-tick.C:
			if settled != nil {
				continue // the end of the hold syncs what changed
			}
			end := g.batch()
			for _, name := range g.src.Names() {
				g.syncServer(name)
			}
			g.agg.dropGone(g.src.Names())
			end()
		}
	}
}

// syncServer brings every mirror that shows server in step with it.
func (g *Gateway) syncServer(server string) {
	g.agg.sync(server)
	g.mu.Lock()
	m := g.per[server]
	g.mu.Unlock()
	if m != nil {
		m.sync(server)
	}
	g.syncToolsets(server)
}

// relay passes a server's log message or resource update to the
// downstream sessions that see that server.
func (g *Gateway) relay(ctx context.Context, n upstream.Notification) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	g.mu.Lock()
	per := g.per[n.Server]
	g.mu.Unlock()
	switch p := n.Params.(type) {
	case *mcp.LoggingMessageParams:
		agg := *p
		agg.Logger = n.Server
		if p.Logger != "" {
			agg.Logger += "/" + p.Logger
		}
		for ss := range g.agg.server.Sessions() {
			ss.Log(ctx, &agg)
		}
		if per != nil {
			for ss := range per.server.Sessions() {
				ss.Log(ctx, p)
			}
		}
		for _, m := range g.toolsetMirrors() {
			if ts, _, ok := g.toolset(m.set); ok && ts.Servers(n.Server) {
				for ss := range m.server.Sessions() {
					ss.Log(ctx, &agg)
				}
			}
		}
	case *mcp.ResourceUpdatedNotificationParams:
		if g.agg.owns(n.Server, p.URI) {
			g.agg.server.ResourceUpdated(ctx, p)
		}
		if per != nil {
			per.server.ResourceUpdated(ctx, p)
		}
		for _, m := range g.toolsetMirrors() {
			if m.owns(n.Server, p.URI) {
				m.server.ResourceUpdated(ctx, p)
			}
		}
	}
}

// perServer returns the mirror of one server, creating it on first use;
// nil if there is no such server.
func (g *Gateway) perServer(name string) *mirror {
	if _, ok := g.src.Session(name); !ok {
		return nil
	}
	g.mu.Lock()
	m := g.per[name]
	if m == nil {
		m = g.newMirror(name)
		g.per[name] = m
	}
	g.mu.Unlock()
	m.sync(name)
	return m
}

// Handler serves /mcp (the aggregate) and /mcp/{name} (one server) over
// Streamable HTTP: stateful sessions for protocol versions up to
// 2025-11-25, and the stateless mode that the 2026-07-28 protocol uses.
// DNS-rebinding protection (Host checks for loopback) is the go-sdk's
// check; cross-origin browser requests are refused. Stateful sessions are
// capped (Options.MaxSessions, Options.MaxSessionsPerAddress; sessions.go).
// The handler owns the sessions (endpoint.go).
func (g *Gateway) Handler() http.Handler {
	return g.newEndpoint(g.endpointMirror, func(r *http.Request) error {
		if name := serverName(r); name != "" {
			if _, ok := g.src.Session(name); !ok {
				return fmt.Errorf("no server named %q", name)
			}
		}
		return nil
	})
}

// endpointMirror is the mirror of /mcp or /mcp/{name} that r names: the
// aggregate, or the per-server mirror, made on first use; nil if there is
// no such server.
func (g *Gateway) endpointMirror(r *http.Request) *mirror {
	name := serverName(r)
	if name == "" {
		return g.agg
	}
	g.mu.Lock()
	m := g.per[name]
	g.mu.Unlock()
	if m != nil {
		return m
	}
	return g.perServer(name)
}

// serverName is the {name} of /mcp/{name}, or "" for /mcp.
func serverName(r *http.Request) string {
	rest, _ := strings.CutPrefix(r.URL.Path, "/mcp")
	return strings.Trim(rest, "/")
}

// call runs a downstream tools/call on an upstream server, relaying
// progress, elicitation and sampling to the downstream session that made
// it, and cancellation back up. The call runs as that session's client
// (clients.go), on a session of its own if the server's scope is
// per-client. from is the mirror's server that received it.
func (g *Gateway) call(ctx context.Context, from *mcp.Server, req *mcp.CallToolRequest, server, tool string) (*mcp.CallToolResult, error) {
	ctx = g.clients.withClient(withCaller(ctx, req), req.Session, g.src.ReleaseClient)
	// Requests to the downstream client are sent with the context of the
	// downstream call, which tells the go-sdk to send them on that call's
	// stream (not the standalone one, which a client may not have opened),
	// and end when the upstream gives up on them.
	callCtx := ctx
	onCall := func(upstreamCtx context.Context) (context.Context, context.CancelFunc) {
		c, cancel := context.WithCancel(callCtx)
		stop := context.AfterFunc(upstreamCtx, cancel)
		return c, func() { stop(); cancel() }
	}
	opts := sb.InvokeOptions{
		// A client of the MCP endpoint cannot pass timeouts; the server's
		// call_timeout_ms applies, kept alive by progress, and the whole
		// call is capped, so that a tool that reports progress forever does
		// not hold the client forever.
		ResetTimeoutOnProgress: true,
		MaxTotalTimeout:        g.totalCap(server),
		OnElicitation: func(ctx context.Context, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askElicitation(ctx, req.Session, er)
		},
		OnSampling: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askSampling(ctx, req.Session, raw)
		},
		OnRoots: func(ctx context.Context) (json.RawMessage, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askRoots(ctx, req.Session)
		},
		Input: clientInput(req),
	}
	var args any
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	var raw *upstream.Result
	var err error
	if bridged(opts.Input) {
		// The upstream's requests become requests for input (bridge.go).
		var notify func(sb.Progress)
		if tok := req.Params.GetProgressToken(); tok != nil {
			notify = func(p sb.Progress) {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
		raw, err = g.bridgeCall(ctx, server, tool, args, opts, req.Params.InputResponses, notify)
		var refused *jsonrpc.Error
		if errors.As(err, &refused) && !errors.Is(err, upstream.ErrServerError) {
			if refused.Code == jsonrpc.CodeInvalidParams {
				g.refusedRetry(ctx, server, tool, args)
			}
			return nil, refused // a retry's state refused, in the protocol's shape
		}
	} else {
		var fwd *progressForwarder
		if tok := req.Params.GetProgressToken(); tok != nil {
			fwd = newProgressForwarder(func(p sb.Progress) {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
			})
			opts.OnProgress = fwd.enqueue
		}
		raw, err = g.ex.Execute(ctx, server+"/"+tool, args, opts)
		if fwd != nil {
			fwd.flush() // every progress notification goes out before the result
		}
	}
	var te *upstream.ToolError
	if raw == nil && errors.As(err, &te) {
		raw = te.Result
	}
	var res *mcp.CallToolResult
	if raw != nil {
		// The go-sdk's server encodes what its handler returns: the
		// result is decoded for it.
		if res, err = raw.Decode(); err != nil {
			err = fmt.Errorf("the server's result: %w", err)
		}
	}
	res, rpc := g.answer(ctx, server, tool, res, err)
	if rpc != nil {
		return nil, rpc
	}
	return res, nil
}

// answer is what a client of the MCP endpoints gets for the outcome of a
// call: the result (an isError one included), the upstream's own JSON-RPC
// error passed through, or, for Switchboard's own failures (timeout,
// connection lost, unavailable), a result the model can read, marked as an
// error, with the code and phase (and which limit a timeout hit) in _meta
// for programs, logged with the caller's name.
func (g *Gateway) answer(ctx context.Context, server, tool string, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, *jsonrpc.Error) {
	if err == nil || errors.Is(err, upstream.ErrToolError) {
		return res, nil
	}
	var rpc *jsonrpc.Error
	if errors.Is(err, upstream.ErrServerError) && errors.As(err, &rpc) {
		return nil, rpc
	}
	g.logFailure(ctx, server, tool, err)
	meta := map[string]any{"code": sb.CodeOf(err), "phase": sb.PhaseOf(err)}
	var te *upstream.TimeoutError
	if errors.As(err, &te) {
		meta["limit"] = te.Limit
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: "switchboard: " + err.Error()}},
		Meta:    mcp.Meta{"switchboard/error": meta},
	}, nil
}

// totalCap is the max_total_timeout of a call to server through the
// gateway: the server's own, else Options.MaxTotalTimeout (none if
// negative).
func (g *Gateway) totalCap(server string) time.Duration {
	if d := g.src.MaxTotalTimeout(server); d > 0 {
		return d
	}
	return max(g.opts.MaxTotalTimeout, 0)
}

// progressBacklog bounds the progress notifications queued for a slow
// downstream client; the upstream session's reader never waits on one.
const progressBacklog = 1024

// progressForwarder sends one call's progress downstream, in order, from a
// goroutine of its own, so that a slow client never stalls the upstream
// session that delivers the notifications.
type progressForwarder struct {
	queue chan sb.Progress
	done  chan struct{}
}

func newProgressForwarder(send func(sb.Progress)) *progressForwarder {
	f := &progressForwarder{queue: make(chan sb.Progress, progressBacklog), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for p := range f.queue {
			send(p)
		}
	}()
	return f
}

func (f *progressForwarder) enqueue(p sb.Progress) {
	select {
	case f.queue <- p:
	default: // a client this far behind loses progress, never the result
	}
}

// flush waits until every queued notification has been sent.
func (f *progressForwarder) flush() {
	close(f.queue)
	<-f.done
}

// notFound answers 404 for an MCP endpoint that names no server or
// toolset, in the API's JSON error body, as the 401 and 403 of the same
// endpoints are.
func notFound(w http.ResponseWriter, err error) {
	body, _ := json.Marshal(api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeNotFound, Message: err.Error()}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	w.Write(append(body, '\n'))
}
