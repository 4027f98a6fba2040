package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
// for input (prompts/get, resources/read): what a 2025-11-25 server asks
// while it runs (elicitation/create, sampling/createMessage, roots/list),
// and what a 2026-07-28 server's request for input as the result asks, go
// to opts' handlers as a tool call's do (CallTool: the request is sent
// again with the answers, at most maxInputRounds times), and the request
// is bounded by the server's call timeout, paused while the caller
// answers. Only the handlers, Parked and Timeout of opts are used.
func (s *Session) RequestAsking(ctx context.Context, method string, params json.RawMessage, name string, opts sb.InvokeOptions) (json.RawMessage, error) {
	if opts.Timeout == 0 {
		opts.Timeout = time.Duration(s.callTimeout.Load())
	}
	l, _, err := s.current(ctx, nil)
	if err != nil {
		return nil, err
	}
	params = withLinkMeta(params, l.newMeta)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{opts: opts, ctx: ctx}
	c.timer = newCallTimer(opts.Timeout, func() { cancel(errRequestTimeout) })
	defer c.timer.stop()
	tok := s.calls.add(c)
	defer s.calls.remove(tok)
	defer c.finish()
	for round := 0; ; round++ {
		raw, err := l.conn.Call(ctx, &wire.Request{Method: method, Params: params, Name: name, Tag: tok})
		if we, ok := wire.AsError(err); ok && we.Kind == wire.KindRPC && we.RPC != nil {
			return nil, s.scrub(we.RPC)
		}
		if err != nil && context.Cause(ctx) == errRequestTimeout {
			return nil, fmt.Errorf("%s: %s timed out after %s: %w", s.cfg.Name, method, opts.Timeout, err)
		}
		if err != nil || !inputRequired(raw) {
			return raw, err
		}
		if round == maxInputRounds {
			return nil, fmt.Errorf("%s: %s: the server asked for input %d times without a result", s.cfg.Name, method, maxInputRounds+1)
		}
		answers, err := s.fulfil(ctx, c, name, raw)
		if err != nil {
			return nil, err
		}
		params = withMembers(params, answers)
	}
}

// withLinkMeta returns params with the members every request of a
// 2026-07-28 link carries (link.newMeta; none on an older link) in its
// _meta, unless the caller's _meta has them: the request of a 2025-11-25
// client (prompts/get, resources/read), which names no protocol of its
// own.
func withLinkMeta(params json.RawMessage, newMeta []byte) json.RawMessage {
	if len(newMeta) == 0 {
		return params
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return params // the server will say what is wrong with it
	}
	var link map[string]json.RawMessage
	_ = json.Unmarshal(append(append([]byte{'{'}, newMeta...), '}'), &link) // requestMeta's: valid
	if p.Meta == nil {
		p.Meta = link
	} else {
		for k, v := range link {
			if _, ok := p.Meta[k]; !ok {
				p.Meta[k] = v
			}
		}
	}
	meta, _ := json.Marshal(p.Meta) // raw messages: never fails
	return withMembers(params, append([]byte(`,"_meta":`), meta...))
}

// withMembers returns the JSON object params with members (",name:value"
// pairs, as inputMembers makes them) in place of any of the same names it
// had: the params of a request sent again with a caller's answers.
func withMembers(params json.RawMessage, members []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	var add map[string]json.RawMessage
	if len(members) > 0 {
		obj := append([]byte{'{'}, members[1:]...)
		_ = json.Unmarshal(append(obj, '}'), &add) // members are valid JSON (inputMembers)
	}
	maps.Copy(m, add)
	b, _ := json.Marshal(m) // raw messages: never fails
	return b
}
