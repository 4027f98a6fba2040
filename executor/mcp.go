package executor

import (
	"context"
	"fmt"
	"slices"
	"sync"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Sessions is where the MCP plugin finds upstream sessions by server name.
// The registry implements it; Static is a fixed set.
type Sessions interface {
	// Session returns a server's shared session: ok is false for an
	// unknown server; the session is nil for a known server that is not
	// running (disabled).
	Session(name string) (s *upstream.Session, ok bool)
	// ClientSession returns the session that serves client's calls to a
	// server (for a server whose session_scope is "per-client", one of
	// client's own; else the shared one), and done, to be called when the
	// call has ended. See registry.Registry.ClientSession.
	ClientSession(name, client string) (s *upstream.Session, done func(), err error)
	// Names lists the known servers.
	Names() []string
}

type clientKey struct{}

// WithClient returns ctx carrying the id of the downstream client a call
// is made for (the gateway's id of a downstream MCP session). The MCP
// plugin runs the call on that client's own session when the server's
// session_scope is "per-client". An empty id means no client.
func WithClient(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientKey{}, id)
}

// ClientFrom returns the client id WithClient put in ctx, or "".
func ClientFrom(ctx context.Context) string {
	id, _ := ctx.Value(clientKey{}).(string)
	return id
}

// MCP is the plugin for MCP servers: it invokes tools on upstream sessions
// with upstream.Session.CallTool, which maps every InvokeOptions field onto
// the protocol.
type MCP struct{ sessions Sessions }

// NewMCP returns the MCP plugin over sessions.
func NewMCP(sessions Sessions) *MCP { return &MCP{sessions: sessions} }

// Servers implements Plugin.
func (p *MCP) Servers() []string { return p.sessions.Names() }

// Serves implements Plugin.
func (p *MCP) Serves(server string) bool {
	_, ok := p.sessions.Session(server)
	return ok
}

// Invoke implements Plugin. A call whose ctx carries a client (WithClient)
// runs on the session the server keeps for that client, if its scope is
// "per-client"; every other call on the server's shared session.
func (p *MCP) Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error) {
	s, ok := p.sessions.Session(server)
	if !ok {
		return nil, &AddressError{Address: server + "/" + tool, Kind: ErrUnknownServer}
	}
	if s == nil {
		return nil, disabled(server, tool)
	}
	if client := ClientFrom(ctx); client != "" {
		cs, done, err := p.sessions.ClientSession(server, client)
		if err != nil {
			return nil, clientSessionFailed(server, tool, err)
		}
		defer done()
		s = cs
	}
	return s.CallTool(ctx, tool, args, opts)
}

func disabled(server, tool string) error {
	return &upstream.CallError{Server: server, Tool: tool, Phase: sb.PhaseConfig, Kind: upstream.ErrUnavailable,
		Message: "the server is disabled; enable it to call its tools", Err: upstream.ErrDisabled}
}

// clientSessionFailed is the call error for a client session that could
// not be had: the server went away or was disabled since Session said it
// was there, the registry is shutting down, or the server's per-client
// sessions are at their cap. Nothing was sent.
func clientSessionFailed(server, tool string, err error) error {
	switch sb.CodeOf(err) {
	case sb.CodeNotFound, sb.CodeUnknownServer:
		return &AddressError{Address: server + "/" + tool, Kind: ErrUnknownServer}
	case sb.CodeDisabled:
		return disabled(server, tool)
	case sb.CodeShuttingDown:
		return &upstream.CallError{Server: server, Tool: tool, Phase: sb.PhaseToolCall, Kind: upstream.ErrShutdown,
			Message: err.Error(), Err: err}
	case sb.CodeUnavailable:
		return &upstream.CallError{Server: server, Tool: tool, Phase: sb.PhaseToolCall, Kind: upstream.ErrUnavailable,
			Message: err.Error(), Err: err}
	}
	return fmt.Errorf("%s/%s: %w", server, tool, err)
}

// Static is a fixed, concurrency-safe set of sessions, each shared by
// every client.
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

// ClientSession implements Sessions: every client shares the one session.
func (st *Static) ClientSession(name, _ string) (*upstream.Session, func(), error) {
	s, ok := st.Session(name)
	if !ok {
		return nil, nil, ErrUnknownServer
	}
	return s, func() {}, nil
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
