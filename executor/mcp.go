package executor

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Sessions is where the MCP plugin finds upstream sessions by server name.
// The registry implements it; Static is a fixed set.
type Sessions interface {
	// Session returns a server's session: ok is false for an unknown
	// server; the session is nil for a known server that is not running
	// (disabled).
	Session(name string) (s *upstream.Session, ok bool)
	// Names lists the known servers.
	Names() []string
}

// MCP is the plugin for MCP servers: it invokes tools on upstream sessions
// with upstream.Session.CallTool, which maps every InvokeOptions field onto
// the protocol.
type MCP struct{ sessions Sessions }

// NewMCP returns the MCP plugin over sessions.
func NewMCP(sessions Sessions) *MCP { return &MCP{sessions: sessions} }

// Servers implements Plugin.
func (p *MCP) Servers() []string { return p.sessions.Names() }

// Invoke implements Plugin.
func (p *MCP) Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*mcp.CallToolResult, error) {
	s, ok := p.sessions.Session(server)
	if !ok {
		return nil, &AddressError{Address: server + "/" + tool, Kind: ErrUnknownServer}
	}
	if s == nil {
		return nil, &upstream.CallError{Server: server, Tool: tool, Phase: sb.PhaseConfig, Kind: upstream.ErrUnavailable,
			Message: "the server is disabled; enable it to call its tools", Err: upstream.ErrDisabled}
	}
	return s.CallTool(ctx, tool, args, opts)
}

// Static is a fixed, concurrency-safe set of sessions.
type Static struct {
	mu sync.RWMutex
	m  map[string]*upstream.Session
}

// NewStatic returns a set holding sessions.
func NewStatic(sessions ...*upstream.Session) *Static {
	st := &Static{m: make(map[string]*upstream.Session)}
	for _, s := range sessions {
		st.m[s.Name()] = s
	}
	return st
}

// Session implements Sessions.
func (st *Static) Session(name string) (*upstream.Session, bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, ok := st.m[name]
	return s, ok
}

// Names implements Sessions, sorted.
func (st *Static) Names() []string {
	st.mu.RLock()
	defer st.mu.RUnlock()
	names := make([]string, 0, len(st.m))
	for n := range st.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
