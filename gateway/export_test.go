package gateway

import (
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/toolsearch"
)

// RelayServed reports how many tools/call requests g's relay has served.
func RelayServed(g *Gateway) int64 { return g.served.Load() }

// AggregateTools returns the tool names the aggregate shows now, sorted,
// without the wait for first attempts that a tools/list makes.
func AggregateTools(g *Gateway) []string {
	g.agg.mu.Lock()
	defer g.agg.mu.Unlock()
	return slices.Sorted(maps.Keys(g.agg.tools))
}

// SearchDocs returns what the gateway's index knows of tools.
func SearchDocs(tools []*mcp.Tool) []toolsearch.Tool {
	out := make([]toolsearch.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, searchDoc(t.Name, t))
	}
	return out
}

// ExpireHeld expires every call g holds for its client's input, as
// heldTTL does, and waits until each has returned.
func ExpireHeld(g *Gateway) { g.held.closeAll() }

// HeldCalls is how many calls g holds for their clients' input.
func HeldCalls(g *Gateway) int { return g.held.len() }
