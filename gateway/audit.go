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

// readFrom reads a resource of server, bounded by its call timeout.
func (m *mirror) readFrom(ctx context.Context, server string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	cs, ctx, cancel, err := m.client(ctx, server)
	if err != nil {
		return nil, err
	}
	defer cancel()
	q := *p
	q.Meta = upstreamMeta(cs, q.Meta)
	return cs.ReadResource(ctx, &q)
}

// getFrom gets a prompt of server, bounded by its call timeout, for the
// client of ss. A 2026-07-28 client's get of a 2026-07-28 upstream's
// prompt goes as bytes, so that a request for input reaches the client
// (generation.go); a 2025-11-25 upstream's requests during it are asked
// of the client (bridgePrompt, askingPrompt).
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
	if olderThan2026(cs) && ss != nil {
		return m.askingPrompt(ctx, server, p, ss)
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
