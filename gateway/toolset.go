package gateway

// A toolset (sb.Toolset) is served as a mirror of its own at
// /toolsets/{name}/mcp. Its mirror lists only what the toolset selects,
// and every handler it registers asks again before it acts: listing,
// tools/call, prompts/get, resources/read, subscriptions and completion
// all go through mirror.allows, which is sb.Toolset.Allows on the
// toolset as it is now. So a hidden tool cannot be called by its original
// name, its aggregated name or a guess, on any protocol version (the
// stateless 2026-07-28 requests are served by the same mirror), and a
// toolset narrowed while a session is open takes effect at its next
// request.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// ToolsetSource is where the gateway finds toolsets and learns of their
// changes; registry.Toolsets implements it.
type ToolsetSource interface {
	// Toolset returns the toolset named name and its version; the caller
	// does not change it.
	Toolset(name string) (*sb.Toolset, int64, bool)
	// Subscribe returns the names of the toolsets that change.
	Subscribe() (<-chan string, func())
}

// toolset returns the toolset a toolset mirror serves, as it is now.
func (g *Gateway) toolset(name string) (*sb.Toolset, int64, bool) {
	if g.opts.Toolsets == nil {
		return nil, 0, false
	}
	return g.opts.Toolsets.Toolset(name)
}

// allows is the mirror's side of the one decision: everything in the
// aggregate and a per-server mirror, what the toolset allows (sb.Toolset.
// Allows) in a toolset's.
func (m *mirror) allows(kind sb.Kind, server, name string) bool {
	if m.set == "" {
		return true
	}
	ts, _, ok := m.g.toolset(m.set)
	return ok && ts.Allows(kind, server, name)
}

// selector returns the toolset's selector of an item, for its overrides;
// false outside a toolset mirror.
func (m *mirror) selector(kind sb.Kind, server, name string) (sb.Selector, bool) {
	if m.set == "" {
		return sb.Selector{}, false
	}
	ts, _, ok := m.g.toolset(m.set)
	if !ok {
		return sb.Selector{}, false
	}
	return ts.Select(kind, server, name)
}

// selected keeps of a server's catalog what the toolset allows.
func (m *mirror) selected(server string, tools []*mcp.Tool, resources []*mcp.Resource,
	templates []*mcp.ResourceTemplate, prompts []*mcp.Prompt) ([]*mcp.Tool, []*mcp.Resource, []*mcp.ResourceTemplate, []*mcp.Prompt) {
	return keep(tools, func(t *mcp.Tool) bool { return m.allows(sb.KindTool, server, t.Name) }),
		keep(resources, func(r *mcp.Resource) bool { return m.allows(sb.KindResource, server, r.URI) }),
		keep(templates, func(t *mcp.ResourceTemplate) bool { return m.allows(sb.KindResource, server, t.URITemplate) }),
		keep(prompts, func(p *mcp.Prompt) bool { return m.allows(sb.KindPrompt, server, p.Name) })
}

func keep[T any](items []T, ok func(T) bool) []T {
	var out []T
	for _, it := range items {
		if ok(it) {
			out = append(out, it)
		}
	}
	return out
}

// override applies a selector's description and annotations to a tool
// (a copy the mirror owns).
func override(t *mcp.Tool, sel sb.Selector) {
	if sel.Description != "" {
		t.Description = sel.Description
	}
	a := sel.Annotations
	if a == nil {
		return
	}
	var ann mcp.ToolAnnotations
	if t.Annotations != nil {
		ann = *t.Annotations
	}
	if a.Title != "" {
		ann.Title = a.Title
	}
	if a.ReadOnlyHint != nil {
		ann.ReadOnlyHint = *a.ReadOnlyHint
	}
	if a.DestructiveHint != nil {
		ann.DestructiveHint = a.DestructiveHint
	}
	if a.IdempotentHint != nil {
		ann.IdempotentHint = *a.IdempotentHint
	}
	if a.OpenWorldHint != nil {
		ann.OpenWorldHint = a.OpenWorldHint
	}
	t.Annotations = &ann
}

// unknownTool is the go-sdk's own answer to a tool it does not list, so
// that a tool the toolset hides and one that does not exist look the same.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// toolsetMirror returns the mirror of a toolset, creating it on first use
// and bringing it in step with the toolset's current version; nil if
// there is no such toolset.
func (g *Gateway) toolsetMirror(name string) *mirror {
	_, version, ok := g.toolset(name)
	if !ok {
		return nil
	}
	g.mu.Lock()
	m := g.sets[name]
	if m == nil {
		m = g.newMirrorOf("", name)
		m.version = -1 // not in step with any version yet
		if g.sets == nil {
			g.sets = make(map[string]*mirror)
		}
		g.sets[name] = m
	}
	g.mu.Unlock()
	if m.stale(version) {
		m.resyncAll()
	}
	return m
}

// stale reports whether the mirror shows another version of its toolset
// than version, and takes version as the one it will show.
func (m *mirror) stale(version int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == version {
		return false
	}
	m.version = version
	return true
}

// resyncAll shows the toolset afresh: everything is removed and what the
// toolset selects added again, so that changed names and overrides show
// (one list_changed per list for the clients).
func (m *mirror) resyncAll() {
	defer m.g.batch()()
	names := m.g.src.Names()
	m.mu.Lock()
	for server, ex := range m.shown {
		for name := range ex.tools {
			if !m.search { // in search mode the go-sdk's server has only its two tools
				m.server.RemoveTools(name)
			}
			delete(m.tools, name)
		}
		for name := range ex.prompts {
			m.server.RemovePrompts(name)
			delete(m.prompts, name)
		}
		for uri := range ex.resources {
			m.server.RemoveResources(uri)
			delete(m.uris, uri)
		}
		for uri := range ex.templates {
			m.server.RemoveResourceTemplates(uri)
			delete(m.uris, uri)
		}
		delete(m.shown, server)
		if m.index != nil {
			m.index.Set(server, nil)
		}
	}
	m.changed(toolListChanged, promptListChanged, resourceListChanged)
	m.mu.Unlock()
	ts, _, _ := m.g.toolset(m.set)
	m.setSearch(ts != nil && ts.Mode == sb.ModeSearch)
	for _, server := range names {
		m.sync(server)
	}
}

// syncToolsets brings every toolset mirror in step with server.
func (g *Gateway) syncToolsets(server string) {
	for _, m := range g.toolsetMirrors() {
		m.sync(server)
	}
}

func (g *Gateway) toolsetMirrors() []*mirror {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*mirror, 0, len(g.sets))
	for _, m := range g.sets {
		out = append(out, m)
	}
	return out
}

// followToolsets applies the toolsets' changes to their mirrors until ctx
// ends: a changed toolset is shown afresh, a deleted one is emptied and
// its clients get 404 from then on.
func (g *Gateway) followToolsets(ctx context.Context) {
	changes, stop := g.opts.Toolsets.Subscribe()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case name, ok := <-changes:
			if !ok {
				return
			}
			g.mu.Lock()
			m := g.sets[name]
			g.mu.Unlock()
			if m == nil {
				continue // nobody uses it yet: its first client builds it
			}
			if _, _, ok := g.toolset(name); !ok {
				// Deleted: its open sessions see an empty list (and
				// list_changed) until they end; new requests get 404.
				m.resyncAll()
				g.mu.Lock()
				delete(g.sets, name)
				g.mu.Unlock()
				continue
			}
			g.toolsetMirror(name)
		}
	}
}

// ToolsetHandler serves /toolsets/{name}/mcp: the toolset name as an MCP
// server, over Streamable HTTP like Handler (stateful sessions up to
// 2025-11-25, stateless requests of 2026-07-28), within the same session
// caps. A name that is no toolset is answered 404.
//
// Each toolset has a Streamable HTTP handler of its own, so that a session
// begun on one toolset's endpoint is unknown on another's: a token of
// toolset B that learnt the session id of a client of A gets 404 there.
func (g *Gateway) ToolsetHandler() http.Handler {
	var mu sync.Mutex
	handlers := make(map[string]http.Handler) // by toolset name, for every toolset ever served
	exists := func(r *http.Request) error {
		if _, _, ok := g.toolset(ToolsetName(r)); !ok {
			return fmt.Errorf("no toolset named %q", ToolsetName(r))
		}
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := ToolsetName(r)
		if err := exists(r); err != nil {
			notFound(w, err)
			return
		}
		mu.Lock()
		h := handlers[name]
		if h == nil {
			h = g.newEndpoint(func(*http.Request) *mirror { return g.toolsetMirror(name) }, exists)
			handlers[name] = h
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// ToolsetName is the {name} of /toolsets/{name}/mcp, or "".
func ToolsetName(r *http.Request) string {
	rest, ok := strings.CutPrefix(r.URL.Path, "/toolsets/")
	if !ok {
		return ""
	}
	name, ok := strings.CutSuffix(rest, "/mcp")
	if !ok || strings.Contains(name, "/") {
		return ""
	}
	return name
}

// ServeToolset returns the toolset name as an MCP server for one local
// client (switchboard stdio --toolset), or false if there is none.
func (g *Gateway) ServeToolset(name string) (*mcp.Server, bool) {
	m := g.toolsetMirror(name)
	if m == nil {
		return nil, false
	}
	return m.server, true
}

// withCaller puts who made a downstream request in ctx, for the metrics
// and logs by token: the go-sdk's TokenInfo of this very request (the API
// sets it from the credential, see httpapi), else the principal of the
// request that began the session (ctx carries it), else nobody.
func withCaller(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return sb.WithPrincipal(ctx, sb.Principal{Name: req.Extra.TokenInfo.UserID})
	}
	return ctx
}

// logFailure logs a call that failed in Switchboard (not in the tool),
// with who made it: the API token's name, never its secret.
func (g *Gateway) logFailure(ctx context.Context, server, tool string, err error) {
	who := sb.PrincipalLocal
	if p, ok := sb.PrincipalFrom(ctx); ok && p.Name != "" {
		who = p.Name
	}
	g.log.Info("tool call failed", "server", server, "tool", tool, "token", who, "code", sb.CodeOf(err), "error", err)
}
