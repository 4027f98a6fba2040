package upstream

import (
	"context"
	"encoding/json"

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
