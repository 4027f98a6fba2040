// Package executor runs tools by address: Execute(ctx, "server/tool", args,
// opts) finds the plugin that serves the server and invokes the tool with
// the caller's InvokeOptions.
//
// A Plugin is a kind of tool source. The MCP plugin (NewMCP) sits on
// upstream sessions; a later OpenAPI or HTTP plugin maps the same
// InvokeOptions onto its own timeouts, so callers never name MCP internals
// to say "let this run longer".
package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Plugin serves the tools of some servers. The MCP plugin (NewMCP) is the
// one kind of tool source today; metrics.Instrument wraps any Plugin to
// measure its calls. Listing tools is not a Plugin's job: the registry's
// views and the gateway's mirrors read them from the sessions, which know
// when a list changes. A second kind of source (OpenAPI, say) would add
// listing here, where both callers could share it.
type Plugin interface {
	// Servers returns the names of the servers this plugin serves now.
	Servers() []string
	// Invoke calls a tool. It must honour every field of opts that its
	// transport can, and never return a failure as an empty success.
	Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error)
}

// A ServerFinder is a Plugin that can tell whether it serves a server
// without listing them all. The executor asks it on every call; a plugin
// that is not one has its Servers listed and searched each time, which
// with a thousand servers costs more than the call it routes.
type ServerFinder interface {
	Serves(server string) bool
}

// Errors of address resolution, matched with errors.Is.
var (
	ErrBadAddress    = sb.NewError(sb.CodeBadAddress, `tool address must be "server/tool"`)
	ErrUnknownServer = sb.NewError(sb.CodeUnknownServer, "unknown server")
)

// AddressError is an address that cannot be resolved.
type AddressError struct {
	Address     string
	Kind        error // ErrBadAddress or ErrUnknownServer
	Suggestions []string
}

func (e *AddressError) Error() string {
	if e.Kind == ErrBadAddress {
		return fmt.Sprintf("%q: %v", e.Address, ErrBadAddress)
	}
	server, _, _ := strings.Cut(e.Address, "/")
	msg := fmt.Sprintf("no server named %q", server)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(quote(e.Suggestions), " or ") + "?"
	}
	return msg
}

// Unwrap returns Kind.
func (e *AddressError) Unwrap() error { return e.Kind }

func quote(s []string) []string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return q
}

// ParseAddress splits "server/tool". The tool part may itself contain
// slashes (some servers use them); the server part may not.
func ParseAddress(addr string) (server, tool string, err error) {
	server, tool, ok := strings.Cut(addr, "/")
	if !ok || server == "" || tool == "" || strings.TrimSpace(addr) != addr {
		return "", "", &AddressError{Address: addr, Kind: ErrBadAddress}
	}
	return server, tool, nil
}

// Executor dispatches tool calls to plugins. It is safe for concurrent use.
type Executor struct {
	plugins []Plugin // fixed at New
}

// New returns an executor over plugins, consulted in order.
func New(plugins ...Plugin) *Executor { return &Executor{plugins: plugins} }

// Execute calls the tool at addr ("server/tool") with args, bounded and
// observed per opts. An unknown server or tool fails before anything is
// sent, with the closest names suggested.
func (e *Executor) Execute(ctx context.Context, addr string, args any, opts sb.InvokeOptions) (*upstream.Result, error) {
	server, tool, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	p, err := e.plugin(addr, server)
	if err != nil {
		return nil, err
	}
	res, err := p.Invoke(ctx, server, tool, args, opts)
	return kept(addr, res, err)
}

// kept holds a plugin to its contract, so that no surface has to: a tool's
// isError result comes back with its *upstream.ToolError, and a call
// returns a result or an error, never neither.
func kept(addr string, res *upstream.Result, err error) (*upstream.Result, error) {
	var te *upstream.ToolError
	switch {
	case errors.As(err, &te) && res == nil:
		return te.Result, err
	case err == nil && res == nil:
		return nil, fmt.Errorf("%s: the call returned neither a result nor an error", addr)
	}
	return res, err
}

// plugin returns the plugin that serves server. Only a call to an unknown
// server lists every plugin's servers, for the suggestions.
func (e *Executor) plugin(addr, server string) (Plugin, error) {
	for _, p := range e.plugins {
		if Serves(p, server) {
			return p, nil
		}
	}
	var all []string
	for _, p := range e.plugins {
		all = append(all, p.Servers()...)
	}
	return nil, &AddressError{Address: addr, Kind: ErrUnknownServer, Suggestions: upstream.Suggest(server, all)}
}

// Serves reports whether p serves server: by asking it, if it can tell
// (ServerFinder), else by looking through its list. A plugin that wraps
// another implements ServerFinder with it.
func Serves(p Plugin, server string) bool {
	if f, ok := p.(ServerFinder); ok {
		return f.Serves(server)
	}
	return slices.Contains(p.Servers(), server)
}
