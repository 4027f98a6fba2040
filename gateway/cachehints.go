package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/upstream"
)

// A list a mirror serves carries the cache hints (SEP-2549: ttlMs,
// cacheScope) of the servers whose items it shows, as their own lists
// said them: on /mcp/NAME that server's, on /mcp and a toolset's endpoint
// private if any of them said private, with the shortest ttlMs any of
// them said. A list of a server that said none (one of 2025-11-25)
// leaves the go-sdk's default (public, ttlMs 0); so does search mode's
// tools/list, whose tools are the gateway's own. A resources/read keeps
// the hints of the upstream's result (readResource), and server/discover
// the go-sdk's.

// listHints folds the hints of the servers that contribute to each list:
// those that show an item of it here, and a per-server mirror's server
// whatever it shows (its list is its own, empty or not). m.mu is held.
func (m *mirror) listHints() *upstream.ListHints {
	var h upstream.ListHints
	for _, e := range m.shown {
		all := m.only != ""
		if !m.search && (all || len(e.tools) > 0) {
			upstream.AddCacheHint(&h.Tools, e.hints.Tools)
		}
		if all || len(e.resources) > 0 {
			upstream.AddCacheHint(&h.Resources, e.hints.Resources)
		}
		if all || len(e.templates) > 0 {
			upstream.AddCacheHint(&h.Templates, e.hints.Templates)
		}
		if all || len(e.prompts) > 0 {
			upstream.AddCacheHint(&h.Prompts, e.hints.Prompts)
		}
	}
	return &h
}

// setCacheable is the go-sdk server's SetCacheable: it sets the hints of a
// list result to those of the servers the list shows (listHints). The
// go-sdk calls it with its server's lock held, which sync holds while it
// takes m.mu: it reads the hints sync stored, never m.mu.
func (m *mirror) setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	h := m.hints.Load()
	if h == nil {
		return
	}
	var said mcp.Cacheable
	switch req.(type) {
	case *mcp.ListToolsRequest:
		said = h.Tools
	case *mcp.ListResourcesRequest:
		said = h.Resources
	case *mcp.ListResourceTemplatesRequest:
		said = h.Templates
	case *mcp.ListPromptsRequest:
		said = h.Prompts
	default:
		return
	}
	if said.CacheScope != "" {
		*c = said
	}
}
