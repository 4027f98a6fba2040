package upstream

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// This file carries MCP over a byte stream: newline-delimited JSON-RPC, on
// a stdio server's pipes or on the stream that Options.Dial returns (an
// in-process server).

// ioTransport speaks newline-delimited JSON-RPC over r and w, frames
// bounded by the result size cap; its connection (frames.go), kept on the
// link, also carries relayed calls, and shows every message to the
// progress tap (onWire) as it reads it. The connection ends on an
// oversized frame without saying so in a way a caller can test; the
// oversize hook notes it on the link first.
func (s *Session) ioTransport(l *link, r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	limit := s.opts.MaxResultBytes + frameOverhead
	return &frameTransport{
		r:     r,
		w:     w,
		limit: limit,
		hooks: frameHooks{line: s.onWire, oversize: func() {
			// No call is sent on the link from here on: calls wait for the
			// reconnect instead of failing on a connection being reset.
			l.markDead(fail(sb.PhaseRuntime, sb.CodeResultTooLarge, retryFast, ErrResultTooLarge,
				"the server sent a message over the %d-byte limit; the connection was reset", limit))
			l.sharedBlame.Store(l.calls.Load() > 1)
			l.oversized.Store(true) // last: it publishes the two above
		}},
		conn: &l.frames,
	}
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
