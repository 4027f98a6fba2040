package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
)

// The audit log (Options.Audit) learns the surface of a call from its
// context: a mirror is the surface (the aggregate /mcp, a per-server
// /mcp/{name}, a toolset's endpoint), unless the context names one
// already (switchboard stdio's, or an HTTP request's as httpapi marks
// it). The go-sdk runs a request's handler in a context of the session,
// not of the HTTP request, so the handlers mark theirs.

// audited is ctx marked with m's surface, if the gateway keeps an audit
// log and ctx carries no surface.
func (m *mirror) audited(ctx context.Context) context.Context {
	if m.g.opts.Audit == nil || audit.HasSurface(ctx) {
		return ctx
	}
	switch {
	case m.set != "":
		return audit.WithSurface(ctx, sb.SurfaceToolset, m.set)
	case m.only != "":
		return audit.WithSurface(ctx, sb.SurfaceMCPServer, "")
	}
	return audit.WithSurface(ctx, sb.SurfaceMCP, "")
}

// auditedBy is audited with the principal of a go-sdk request (its
// TokenInfo, which httpapi sets), as withCaller gives a tool call.
func (m *mirror) auditedBy(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if m.g.opts.Audit == nil {
		return ctx
	}
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		if _, ok := sb.PrincipalFrom(ctx); !ok {
			ctx = sb.WithPrincipal(ctx, sb.Principal{Name: extra.TokenInfo.UserID})
		}
	}
	return m.audited(ctx)
}

// auditedRequest is r with its context audited, for the relay.
func (m *mirror) auditedRequest(r *http.Request) *http.Request {
	if m.g.opts.Audit == nil || audit.HasSurface(r.Context()) {
		return r
	}
	return r.WithContext(m.audited(r.Context()))
}

// auditRequests is a receiving middleware of a mirror's server, while the
// gateway keeps an audit log: a tools/call, resources/read or prompts/get
// that fails before anything records it (a tool, prompt or resource the
// mirror does not show or its toolset does not allow, which the go-sdk's
// server or the mirror refuses; a bridged retry whose requestState is
// refused, which Gateway.call records: refusedRetry) gets an entry of its
// own, so that every call attempt leaves one. What reaches the executor
// or the upstream is recorded there, with its own outcome
// (audit.Log.Instrument, Begin). Its outcome is unknown_tool for a tool
// not shown or not allowed, not_found for such a prompt or resource.
func (m *mirror) auditRequests(next mcp.MethodHandler) mcp.MethodHandler {
	l := m.g.opts.Audit
	if l == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var kind sb.AuditKind
		switch method {
		case "tools/call":
			kind = sb.AuditTool
		case "resources/read":
			kind = sb.AuditResource
		case "prompts/get":
			kind = sb.AuditPrompt
		default:
			return next(ctx, method, req)
		}
		ctx = audit.Attempt(m.auditedBy(ctx, req.GetExtra()))
		start := l.Now()
		res, err := next(ctx, method, req)
		if err == nil || audit.Recorded(ctx) {
			return res, err
		}
		e := sb.AuditEntry{Time: start, Kind: kind, Outcome: string(sb.CodeNotFound), Duration: l.Now().Sub(start)}
		var args []byte
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			if (p.Name == SearchToolName || p.Name == CallToolName) && m.searching() {
				return res, err // search mode's own tools (search.go), not a catalog's
			}
			e.Name, args = p.Name, p.Arguments
			e.Outcome = string(sb.CodeUnknownTool)
			if o, ok := m.origin(sb.KindTool, p.Name); ok && m.allows(sb.KindTool, o.server, o.name) {
				// Shown and allowed: it reached Gateway.call, which
				// records what the executor does not (refusedRetry).
				return res, err
			}
		case *mcp.GetPromptParams:
			e.Name, args = p.Name, promptArgs(p.Arguments)
			if o, ok := m.origin(sb.KindPrompt, p.Name); ok {
				e.Server, e.Name = o.server, o.name
			}
		case *mcp.ReadResourceParams:
			e.Name = p.URI
		}
		l.Record(ctx, e, args)
		return res, err
	}
}

// refusedRetry records a bridged retry whose requestState the gateway
// refused (bridge.go: unknown, expired, another's): nothing ran, and the
// attempt's outcome is bad_request. The upstream call it names, if any, is
// its own first round's entry.
func (g *Gateway) refusedRetry(ctx context.Context, server, tool string, args any) {
	if g.opts.Audit == nil {
		return
	}
	b, _ := args.(json.RawMessage)
	g.opts.Audit.Record(ctx, sb.AuditEntry{Time: g.opts.Audit.Now(), Kind: sb.AuditTool, Server: server, Name: tool,
		Outcome: string(sb.CodeBadRequest)}, b)
}

// readFrom reads a resource of server, bounded by its call timeout, for
// the client of ss, as getFrom gets a prompt: a 2026-07-28 upstream's read
// goes as bytes (readBytes) to a 2026-07-28 client; a 2025-11-25
// upstream's requests during it are asked of a 2026-07-28 client
// (bridgeRead); a 2025-11-25 client's read goes through asking, which asks
// it what the upstream asks, of either generation.
func (m *mirror) readFrom(ctx context.Context, server string, p *mcp.ReadResourceParams, newClient bool, ss *mcp.ServerSession) (*mcp.ReadResourceResult, error) {
	cs, ctx, cancel, err := m.client(ctx, server)
	if err != nil {
		return nil, err
	}
	defer cancel()
	q := *p
	q.Meta = upstreamMeta(cs, q.Meta)
	switch {
	case newClient && !olderThan2026(cs):
		return m.readBytes(ctx, server, &q)
	case newClient:
		return m.bridgeRead(ctx, server, p)
	case !newClient && ss != nil:
		raw, err := m.asking(ctx, server, "resources/read", q.URI, &q, ss)
		if err != nil {
			return nil, err
		}
		return decodeRead(raw)
	}
	return cs.ReadResource(ctx, &q)
}

// getFrom gets a prompt of server, bounded by its call timeout, for the
// client of ss. A 2026-07-28 client's get of a 2026-07-28 upstream's
// prompt goes as bytes, so that a request for input reaches the client
// (generation.go); a 2025-11-25 upstream's requests during it are asked
// of a 2026-07-28 client (bridgePrompt); what either upstream asks is
// asked of a 2025-11-25 client (asking).
func (m *mirror) getFrom(ctx context.Context, server string, p *mcp.GetPromptParams, newClient bool, ss *mcp.ServerSession) (*mcp.GetPromptResult, error) {
	cs, ctx, cancel, err := m.client(ctx, server)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if newClient && !olderThan2026(cs) {
		return m.promptBytes(ctx, server, p)
	}
	if newClient {
		return m.bridgePrompt(ctx, server, p)
	}
	if ss != nil {
		p.Meta = upstreamMeta(cs, p.Meta)
		raw, err := m.asking(ctx, server, "prompts/get", p.Name, p, ss)
		if err != nil {
			return nil, err
		}
		return decodePrompt(raw)
	}
	p.Meta = upstreamMeta(cs, p.Meta)
	return cs.GetPrompt(ctx, p)
}

// promptArgs is a prompt's arguments as the audit log hashes them.
func promptArgs(args map[string]string) []byte {
	if len(args) == 0 {
		return nil
	}
	b, _ := json.Marshal(args) // sorted keys: one hash for the same arguments
	return b
}
