// Package executor runs tools by address: Execute(ctx, "server/tool", args,
// opts) finds the plugin that serves the server and invokes the tool with
// the caller's InvokeOptions.
//
// The one source of tools is the MCP plugin (NewMCP), on upstream
// sessions. Plugin is an interface for what wraps or stands in for it:
// metrics.Instrument measures its calls, and the tests of the surfaces
// (gateway's TestEveryCodeReadsTheSameOnEverySurface) fail calls with
// every error code through a plugin of their own.
package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Plugin serves the tools of some servers: the MCP plugin (NewMCP), or
// one that wraps it (metrics.Instrument). Listing tools is not a Plugin's
// job: the registry's views and the gateway's mirrors read them from the
// sessions, which know when a list changes.
type Plugin interface {
	// Serves reports whether the plugin serves server now. The executor
	// asks it on every call, so it must not list every server: with a
	// thousand servers that costs more than the call it routes.
	Serves(server string) bool
	// Servers returns the names of the servers this plugin serves now;
	// the executor lists them only to suggest names for an unknown one.
	Servers() []string
	// Invoke calls a tool. It must honour every field of opts that its
	// transport can, and never return a failure as an empty success.
	Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error)
}

// Refusals is what a Plugin implements to be told of the calls the
// executor refuses before any plugin is invoked (a bad address, an
// unknown server): a record of every call attempt (audit.Log.Instrument)
// sees them there. Refused is called with the call's context, address,
// arguments and error.
type Refusals interface {
	Refused(ctx context.Context, addr string, args any, err error)
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
	if err == nil {
		var p Plugin
		if p, err = e.plugin(addr, server); err == nil {
			res, err := p.Invoke(ctx, server, tool, args, opts)
			return kept(addr, res, err)
		}
	}
	for _, p := range e.plugins {
		if r, ok := p.(Refusals); ok {
			r.Refused(ctx, addr, args, err)
		}
	}
	return nil, err
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
		if p.Serves(server) {
			return p, nil
		}
	}
	var all []string
	for _, p := range e.plugins {
		all = append(all, p.Servers()...)
	}
	return nil, &AddressError{Address: addr, Kind: ErrUnknownServer, Suggestions: upstream.Suggest(server, all)}
}
