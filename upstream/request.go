package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/wire"
)

// Request sends a request of method with params (a JSON object, as the
// caller wrote it) on the session's live link, as bytes, and returns the
// result object as the server wrote it: nothing of it is answered by
// Switchboard's client. It is how a 2026-07-28 client's prompts/get reaches
// a 2026-07-28 server, so that a request for input in its result goes to
// that client (the go-sdk's client would answer it itself). name is what
// Mcp-Name carries (the prompt's name), if anything. The server's
// JSON-RPC error is returned as its *jsonrpc.Error; any other failure is
// the wire's (*wire.Error) or the session's (*Error).
func (s *Session) Request(ctx context.Context, method string, params json.RawMessage, name string) (json.RawMessage, error) {
	l, _, err := s.current(ctx, nil)
	if err != nil {
		return nil, err
	}
	raw, err := l.conn.Call(ctx, &wire.Request{Method: method, Params: params, Name: name})
	if we, ok := wire.AsError(err); ok && we.Kind == wire.KindRPC && we.RPC != nil {
		return nil, s.scrub(we.RPC)
	}
	return raw, err
}

// RequestAsking is Request for a request whose server may ask its caller
// for input while it runs (prompts/get, resources/read of a 2025-11-25
// server: elicitation/create, sampling/createMessage, roots/list): those
// requests go to opts' handlers as a tool call's do (CallTool), and the
// request is bounded by the server's call timeout, paused while the
// caller answers. Only the handlers, Parked and Timeout of opts are used.
func (s *Session) RequestAsking(ctx context.Context, method string, params json.RawMessage, name string, opts sb.InvokeOptions) (json.RawMessage, error) {
	if opts.Timeout == 0 {
		opts.Timeout = time.Duration(s.callTimeout.Load())
	}
	l, _, err := s.current(ctx, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{opts: opts, ctx: ctx}
	c.timer = newCallTimer(opts.Timeout, func() { cancel(errRequestTimeout) })
	defer c.timer.stop()
	tok := s.calls.add(c)
	defer s.calls.remove(tok)
	defer c.finish()
	raw, err := l.conn.Call(ctx, &wire.Request{Method: method, Params: params, Name: name, Tag: tok})
	if we, ok := wire.AsError(err); ok && we.Kind == wire.KindRPC && we.RPC != nil {
		return nil, s.scrub(we.RPC)
	}
	if err != nil && context.Cause(ctx) == errRequestTimeout {
		return nil, fmt.Errorf("%s: %s timed out after %s: %w", s.cfg.Name, method, opts.Timeout, err)
	}
	return raw, err
}
