package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that connects while the servers start (switchboard stdio is
// started by the client itself; serve was just restarted) would otherwise
// see whatever had connected by then, often nothing. Many clients list
// once and ignore list_changed, and one-shot clients (mcp-inspector --cli)
// cannot wait for it; so requests that need the lists wait, bounded by
// Options.ReadyTimeout, for the servers still making their first attempt.

// awaitReady is the mirror's receiving middleware: a request that needs
// the lists first waits for the servers the mirror shows to settle (see
// settle).
func (m *mirror) awaitReady(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if m.needsLists(method, req) {
			m.settle(ctx)
		}
		return next(ctx, method, req)
	}
}

// needsLists reports whether the answer to a request depends on what the
// servers list: a list, or a name the mirror does not show (yet).
func (m *mirror) needsLists(method string, req mcp.Request) bool {
	switch r := req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
		return true
	case *mcp.CallToolRequest:
		if r.Params != nil && m.searching() {
			return m.searchNeedsLists(r)
		}
		return r.Params != nil && !m.has(m.tools, r.Params.Name)
	case *mcp.GetPromptRequest:
		return r.Params != nil && !m.has(m.prompts, r.Params.Name)
	case *mcp.ReadResourceRequest:
		if r.Params == nil {
			return false
		}
		_, ok := m.shows(r.Params.URI)
		return !ok
	}
	return false
}

// has reports whether names (m.tools or m.prompts) shows name.
func (m *mirror) has(names map[string]origin, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := names[name]
	return ok
}

// settle waits until every server the mirror shows has had the outcome of
// its first connection attempt, or has been starting for ReadyTimeout,
// and brings the mirror in step with them: the answer then shows every
// server connected by now, without waiting for the change window. A
// toolset's mirror waits only for the servers its selectors name: one
// slow server of the aggregate holds no toolset that leaves it out.
func (m *mirror) settle(ctx context.Context) {
	if m.g.opts.ReadyTimeout < 0 {
		return
	}
	names := m.shownServers()
	if names != nil && len(names) == 0 {
		return // a toolset that selects no server there is
	}
	if err := m.g.src.WaitSettled(ctx, m.g.opts.ReadyTimeout, names...); err != nil {
		return // the request is cancelled; its handler answers it so
	}
	if names == nil {
		names = m.g.src.Names()
	}
	defer m.g.batch()()
	for _, name := range names {
		m.sync(name)
	}
}

// shownServers returns the servers the mirror may show: its one server, or
// those a toolset's selectors name (none, not nil, if they name none); nil
// for the aggregate, which shows every server.
func (m *mirror) shownServers() []string {
	switch {
	case m.only != "":
		return []string{m.only}
	case m.set != "":
		ts, _, ok := m.g.toolset(m.set)
		names := []string{}
		if !ok {
			return names
		}
		for _, name := range m.g.src.Names() {
			if ts.Servers(name) {
				names = append(names, name)
			}
		}
		return names
	}
	return nil
}
