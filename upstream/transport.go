package upstream

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/wire"
)

// This file carries MCP over a byte stream: newline-delimited JSON-RPC, on
// a stdio server's pipes or on the stream that Options.Dial returns (an
// in-process server).

// ioTransport speaks newline-delimited JSON-RPC over r and w (wire.Stream),
// messages bounded by the result size cap; the connection, kept on the
// link, also carries calls and lists as bytes, and shows every message to
// the progress tap (onWire) as it reads it.
func (s *Session) ioTransport(l *link, r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	c := wire.NewStream(r, w, &wire.Options{Limit: s.opts.MaxResultBytes + frameOverhead, OnMessage: s.onWire})
	l.conn = c
	return wire.Transport{C: c}
}

// dialCustom connects over the byte stream of Options.Dial.
func (s *Session) dialCustom(ctx context.Context) (*link, *failure) {
	rwc, err := s.opts.Dial(ctx)
	if err != nil {
		return nil, fail(sb.PhaseConnect, sb.CodeDialFailed, retryFast, err, "dialing: %v", err)
	}
	l := newLink(sb.TransportInProcess)
	cs, err := s.connect(ctx, l, s.ioTransport(l, rwc, rwc))
	if err != nil {
		rwc.Close()
		return nil, fail(sb.PhaseInitialize, sb.CodeInitializeFailed, retryFast, err, "the MCP handshake failed: %s", describe(err))
	}
	l.cs = cs
	// Closing the link ends the stream, whatever the go-sdk's Close waits
	// for (calls in flight on a connection that no longer answers).
	l.cancel = func() { rwc.Close() }
	go func() {
		err := cs.Wait()
		l.ended(func() *failure {
			return fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err, "the connection closed: %s", describe(err))
		})
	}()
	return l, nil
}
