package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A request reaches an upstream in the upstream's own protocol generation,
// whichever the client's. The go-sdk's server hands the mirror a 2026-07-28
// client's params with the members of _meta that identify the client
// (protocol version, info, capabilities, log level: SEP-2575); passed on
// as they are to an upstream session of 2025-11-25 or before, they would
// name a version that session did not negotiate (its Mcp-Protocol-Version
// header is read from them, wire/streamable.go's requestFields) and the
// server refuses the request (-32022, HTTP 400). The upstream session's
// own version decides; the go-sdk client adds that generation's members
// itself.

// upstreamMeta returns meta as a request on cs carries it: without the
// 2026-07-28 protocol's own members if cs negotiated an older version. meta
// itself is not changed (it is the client's request).
func upstreamMeta(cs *mcp.ClientSession, meta mcp.Meta) mcp.Meta {
	if len(meta) == 0 || !olderThan2026(cs) {
		return meta
	}
	var out mcp.Meta
	for k := range meta {
		if strings.HasPrefix(k, metaPrefix) {
			if out == nil {
				out = maps.Clone(meta)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return meta
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// olderThan2026 reports whether cs negotiated a protocol version before
// 2026-07-28 (initialize): one with sessions, whose requests carry no
// client identity of their own.
func olderThan2026(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir == nil || ir.ProtocolVersion < "2026-07-28"
}

// A 2026-07-28 client answers a server's requests for input itself
// (SEP-2322): a call it makes carries its capabilities, and to a server of
// the same protocol the call goes with them, and with the answers of its
// retry, and the server's request for input comes back to the client as
// the call's result (sb.InvokeOptions.Input). A server of an older
// protocol is called as for any client.

// clientInput returns the Input of a call of req's client, nil if the
// client is not of the 2026-07-28 protocol.
func clientInput(req *mcp.CallToolRequest) *sb.InputRound {
	if req.ProtocolVersion() < "2026-07-28" || req.Params == nil {
		return nil
	}
	in := &sb.InputRound{State: req.Params.RequestState}
	if caps, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities]; ok {
		in.Capabilities, _ = json.Marshal(caps) // decoded JSON: never fails
	}
	if req.Params.InputResponses != nil {
		in.Responses, _ = json.Marshal(req.Params.InputResponses)
	}
	return in
}

// promptBytes gets the prompt of p from server, a 2026-07-28 upstream, for
// a 2026-07-28 client: as bytes on the upstream's connection, so that a
// request for input in the result reaches the client (the go-sdk's client
// would answer it itself, with nobody to ask), and the client's retry with
// its answers reaches the upstream as it came.
func (m *mirror) promptBytes(ctx context.Context, server string, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	raw, err := m.requestBytes(ctx, server, "prompts/get", p, p.Name)
	if err != nil {
		return nil, err
	}
	return decodePrompt(raw)
}

// requestBytes sends a request of method with params p to server on its
// upstream connection, as bytes, and returns its result as the server
// sent it (name says what it is for: the prompt's name, the resource's
// URI).
func (m *mirror) requestBytes(ctx context.Context, server, method string, p any, name string) (json.RawMessage, error) {
	s, ok := m.g.src.Session(server)
	if !ok || s == nil {
		return nil, fmt.Errorf("server %q is not available", server)
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return s.Request(ctx, method, params, name)
}

// bridgePrompt gets the prompt of p from server, a 2025-11-25 upstream,
// for a 2026-07-28 client (bridgeRequest).
func (m *mirror) bridgePrompt(ctx context.Context, server string, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	raw, err := m.bridgeRequest(ctx, server, "prompts/get", p.Name, p, &mcp.GetPromptParams{Name: p.Name, Arguments: p.Arguments},
		p.Meta, p.RequestState, p.InputResponses)
	if err != nil {
		return nil, err
	}
	return decodePrompt(raw)
}

// bridgeRead reads the resource of p from server, a 2025-11-25 upstream,
// for a 2026-07-28 client (bridgeRequest).
func (m *mirror) bridgeRead(ctx context.Context, server string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	raw, err := m.bridgeRequest(ctx, server, "resources/read", p.URI, p, &mcp.ReadResourceParams{URI: p.URI},
		p.Meta, p.RequestState, p.InputResponses)
	if err != nil {
		return nil, err
	}
	return decodeRead(raw)
}

// bridgeRequest sends a 2026-07-28 client's request of method for name
// (a prompts/get or a resources/read, p as the client sent it) to server,
// a 2025-11-25 upstream, as bridgeCall calls a tool: the upstream's
// requests during it become a request for input in the result, and the
// client's retry (a requestState of the gateway's, with its answers)
// resumes them. The held request is told from a tool call's by its
// method. q is p without the client's round (meta, state, answers): what
// the upstream is sent, with meta made the upstream's. A state that is
// not the gateway's is the upstream's own: p goes to it as bytes.
func (m *mirror) bridgeRequest(ctx context.Context, server, method, name string, p any, q mcp.Params,
	meta mcp.Meta, state string, answers mcp.InputResponseMap) (json.RawMessage, error) {
	s, ok := m.g.src.Session(server)
	if !ok || s == nil {
		return nil, fmt.Errorf("server %q is not available", server)
	}
	in := &sb.InputRound{State: state}
	if caps, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
		in.Capabilities, _ = json.Marshal(caps) // decoded JSON: never fails
	}
	if !bridged(in) {
		// An upstream's own state: it is of 2026-07-28 after all.
		return m.requestBytes(ctx, server, method, p, name)
	}
	cs, err := s.Client(ctx)
	if err != nil {
		return nil, err
	}
	q.SetMeta(upstreamMeta(cs, meta))
	params, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	res, err := m.g.bridge(ctx, server, method+" "+name, sb.InvokeOptions{Input: in}, answers, nil,
		func(ctx context.Context, opts sb.InvokeOptions) (*upstream.Result, error) {
			raw, err := s.RequestAsking(ctx, method, params, name, opts)
			if err != nil {
				return nil, err
			}
			return upstream.NewResult(raw)
		})
	if err != nil {
		return nil, err
	}
	return res.Raw, nil
}

// asking sends method with params (its item's name, for Mcp-Name) to
// server for ss's client of 2025-11-25: what the upstream asks, during
// it (a 2025-11-25 upstream) or as its result (a 2026-07-28 upstream's
// request for input, sent again with the answers: RequestAsking), is
// asked of that client through the go-sdk's server, as during a tool call
// (Gateway.call). It is how prompts/get and resources/read reach an
// upstream for such a client.
func (m *mirror) asking(ctx context.Context, server, method, name string, params any, ss *mcp.ServerSession) (json.RawMessage, error) {
	s, ok := m.g.src.Session(server)
	if !ok || s == nil {
		return nil, fmt.Errorf("server %q is not available", server)
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	// Sent with the context of the client's request, which tells the
	// go-sdk to send them on that request's stream, ending when the
	// upstream gives up on them (as Gateway.call does).
	callCtx := ctx
	onCall := func(upstreamCtx context.Context) (context.Context, context.CancelFunc) {
		c, cancel := context.WithCancel(callCtx)
		stop := context.AfterFunc(upstreamCtx, cancel)
		return c, func() { stop(); cancel() }
	}
	opts := sb.InvokeOptions{
		OnElicitation: func(ctx context.Context, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askElicitation(ctx, ss, er)
		},
		OnSampling: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askSampling(ctx, ss, raw)
		},
		OnRoots: func(ctx context.Context) (json.RawMessage, error) {
			ctx, done := onCall(ctx)
			defer done()
			return askRoots(ctx, ss)
		},
	}
	return s.RequestAsking(ctx, method, b, name, opts)
}

// A 2026-07-28 client learns what a server offers from server/discover
// (SEP-2575), as an older one does from initialize. The go-sdk's server
// answers it with the mirror's own capabilities, every kind of them from
// the start (newMirrorOf): the initialize of a session that lives on has
// to announce what servers that connect later bring. A discover is asked
// again by a client that wants to know, so it is answered from the
// upstreams that are connected: on /mcp/NAME that server's capabilities
// and identity, on /mcp the union of the servers'. A toolset's endpoint
// answers what the toolset shows (toolsetCapabilities), and its
// initialize the same: the kinds it selects are known from the start. The
// list_changed flags stay on: the mirror sends them when a server comes
// or goes, whatever the server's own.

// discover is a receiving middleware that answers server/discover from
// the upstreams (upstreamCapabilities), and a toolset's initialize as its
// discover.
func (m *mirror) discover(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && m.set != "" {
			ir.Capabilities = m.toolsetCapabilities(ctx)
			return ir, err
		}
		if method != "server/discover" || err != nil {
			return res, err
		}
		dr, ok := res.(*mcp.DiscoverResult)
		if !ok {
			return res, err
		}
		caps, info := m.upstreamCapabilities(ctx)
		if m.offersTasks() {
			// A server it shows passes tasks through (tasks.go).
			if caps == nil {
				dr.Capabilities = withTasks(dr.Capabilities)
			} else {
				caps = withTasks(caps)
			}
		}
		if caps == nil {
			return res, err // no server connected (or a toolset's): the mirror's own
		}
		dr.Capabilities = caps
		if info != nil {
			meta := dr.GetMeta()
			if meta == nil {
				meta = mcp.Meta{}
			}
			meta[mcp.MetaKeyServerInfo] = info
			dr.SetMeta(meta)
		}
		return dr, nil
	}
}

// upstreamCapabilities returns the union of the capabilities of the
// connected servers this mirror shows, and on /mcp/NAME that server's
// identity; nil if none is connected. A toolset's are its own
// (toolsetCapabilities), with the mirror's identity.
func (m *mirror) upstreamCapabilities(ctx context.Context) (*mcp.ServerCapabilities, *mcp.Implementation) {
	if m.set != "" {
		return m.toolsetCapabilities(ctx), nil
	}
	names := m.g.src.Names()
	if m.only != "" {
		names = []string{m.only}
	}
	var out *mcp.ServerCapabilities
	var info *mcp.Implementation
	for _, name := range names {
		ir := connectedInit(ctx, m.g.src, name)
		if ir == nil {
			continue
		}
		if out == nil {
			out = &mcp.ServerCapabilities{}
		}
		c := ir.Capabilities
		if c.Tools != nil {
			out.Tools = &mcp.ToolCapabilities{ListChanged: true}
		}
		if c.Prompts != nil {
			out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		}
		if c.Resources != nil {
			addResources(out, c.Resources.Subscribe)
		}
		if c.Logging != nil {
			out.Logging = &mcp.LoggingCapabilities{}
		}
		if c.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		if m.only != "" {
			info = ir.ServerInfo
		}
	}
	return out, info
}

// connectedInit returns the initialize result of server if it is
// connected and declared capabilities; nil otherwise.
func connectedInit(ctx context.Context, src Source, server string) *mcp.InitializeResult {
	s, ok := src.Session(server)
	if !ok || s == nil || s.Status() != sb.StatusConnected {
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel() // connected: Client need not wait
	cs, err := s.Client(cctx)
	if err != nil {
		return nil
	}
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return nil
	}
	return ir
}

// addResources adds the resources capability to out, with subscribe if
// sub or if out had it.
func addResources(out *mcp.ServerCapabilities, sub bool) {
	sub = sub || out.Resources != nil && out.Resources.Subscribe
	out.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: sub}
}

// toolsetCapabilities is what a toolset's endpoint offers: the kinds the
// toolset selects (tools, and always in search mode, whose two tools are
// the gateway's; prompts; resources), and of its servers' capabilities
// those that serve what it shows: subscribe if a server it selects
// resources of offers it, completions if one it selects prompts or
// resources of does, logging if any it selects does. Until a server it
// selects is connected, each kind it shows has what the mirror can give
// it (subscribe, completions, logging), as the mirror's own capabilities
// have: a session that begins then must learn of what they bring.
func (m *mirror) toolsetCapabilities(ctx context.Context) *mcp.ServerCapabilities {
	ts, _, _ := m.g.toolset(m.set)
	out := &mcp.ServerCapabilities{}
	if ts == nil {
		return out
	}
	if len(ts.Tools) > 0 || ts.Mode == sb.ModeSearch {
		out.Tools = &mcp.ToolCapabilities{ListChanged: true}
	}
	if len(ts.Prompts) > 0 {
		out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if len(ts.Resources) > 0 {
		out.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	connected := false
	for _, name := range m.g.src.Names() {
		if !ts.Servers(name) {
			continue
		}
		ir := connectedInit(ctx, m.g.src, name)
		if ir == nil {
			continue
		}
		connected = true
		c := ir.Capabilities
		prompts, resources := selectsServer(ts.Prompts, name), selectsResourcesOf(ts.Resources, name)
		if resources && c.Resources != nil && c.Resources.Subscribe {
			addResources(out, true)
		}
		if (prompts || resources) && c.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		if c.Logging != nil {
			out.Logging = &mcp.LoggingCapabilities{}
		}
	}
	if !connected {
		if out.Resources != nil {
			out.Resources.Subscribe = true
		}
		if out.Prompts != nil || out.Resources != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		out.Logging = &mcp.LoggingCapabilities{}
	}
	return out
}

// selectsServer reports whether a selector of sels could pick an item of
// server.
func selectsServer(sels []sb.Selector, server string) bool {
	return slices.ContainsFunc(sels, func(s sb.Selector) bool { return sb.MatchPattern(s.Server, server) })
}

// selectsResourcesOf reports whether a resource selector of sels could
// pick a resource of server.
func selectsResourcesOf(sels []sb.ResourceSelector, server string) bool {
	return slices.ContainsFunc(sels, func(s sb.ResourceSelector) bool { return sb.MatchPattern(s.Server, server) })
}

// readBytes reads the resource of p from server, a 2026-07-28 upstream,
// for a 2026-07-28 client, as promptBytes gets a prompt: a request for
// input in the result reaches the client, and the read is not kept by the
// go-sdk's client, which caches a read for its ttlMs whatever its
// cacheScope, for every client of the shared session.
func (m *mirror) readBytes(ctx context.Context, server string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	raw, err := m.requestBytes(ctx, server, "resources/read", p, p.URI)
	if err != nil {
		return nil, err
	}
	return decodeRead(raw)
}

// decodeRead decodes a server's resources/read result.
func decodeRead(raw json.RawMessage) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the server's result: %w", err)
	}
	return &res, nil
}

// decodePrompt decodes a server's prompts/get result.
func decodePrompt(raw json.RawMessage) (*mcp.GetPromptResult, error) {
	var res mcp.GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the server's result: %w", err)
	}
	return &res, nil
}
