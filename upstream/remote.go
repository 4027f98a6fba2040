package upstream

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// This file dials remote servers: Streamable HTTP, legacy SSE, or
// "remote", which tries Streamable HTTP and falls back to SSE. The HTTP
// client under both (headers, recorded statuses, request lifetimes) is in
// httpclient.go.

// dialRemote connects to a server whose transport is "remote": Streamable
// HTTP first, then legacy SSE if the answer calls for it (see dialHTTP).
func (s *Session) dialRemote(ctx context.Context) (*link, *failure) {
	l, f, fallback := s.dialHTTP(ctx, sb.TransportStreamableHTTP)
	if fallback {
		s.log.Info("Streamable HTTP refused; falling back to legacy SSE", "cause", s.redact.String(f.msg))
		l, f, _ = s.dialHTTP(ctx, sb.TransportSSE)
	}
	return l, f
}

// dialHTTP connects over Streamable HTTP or legacy SSE. For Streamable HTTP
// it also reports whether the answer calls for the SSE fallback: HTTP 400,
// 404 or 405, or the session-missing error the go-sdk maps a 404 to. Never
// on 401/403/406/415/429/5xx, timeouts or refused connections.
func (s *Session) dialHTTP(ctx context.Context, kind sb.Transport) (l *link, f *failure, fallback bool) {
	l = newLink(kind)
	// The link's context lives as long as the link: the legacy SSE client
	// ties its stream to the context given to Connect, and every request of
	// the link ends with it. The attempt's deadline is enforced by cancelling
	// it if Connect has not returned by then.
	lctx, cancel := context.WithCancel(s.runCtx)
	lctx, rec := withStatusRecorder(lctx)
	host := hostOf(s.redact.String(s.cfg.URL))
	hc := &http.Client{Transport: &roundTripper{base: sharedTransport, headers: s.cfg.Headers, linkCtx: lctx, onSSE: s.onWire,
		onRefused: func(err error) {
			l.markDead(fail(sb.PhaseRuntime, sb.CodeConnectionRefused, retryFast, err,
				"connection refused by %s: the server is no longer running", host))
		}}}
	var t mcp.Transport
	if kind == sb.TransportSSE {
		t = &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}
	} else {
		// MaxRetries: the go-sdk's own stream reconnection. Keep its default;
		// the health probe and our reconnect cover what it gives up on.
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}
	}

	stop := context.AfterFunc(ctx, cancel)
	cs, err := s.newClient(l).Connect(lctx, t, s.sessionOptions())
	if !stop() && err == nil {
		cs.Close() // connected just as the deadline passed; treat as timed out
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel()
		endpoint := s.redact.String(s.cfg.URL)
		status := rec.Status()
		if kind == sb.TransportStreamableHTTP && (status == 400 || status == 404 || status == 405 || errors.Is(err, mcp.ErrSessionMissing)) {
			fallback = true
		}
		if ctx.Err() != nil && status == 0 {
			return nil, fail(sb.PhaseInitialize, sb.CodeTimeout, retryFast, err,
				"%s did not complete the MCP handshake within the %s startup timeout", endpoint, s.cfg.StartupTimeout()), fallback
		}
		phase := sb.PhaseInitialize
		if status != 0 {
			phase = sb.PhaseConnect
		}
		return nil, classifyRemote(phase, endpoint, status, err), fallback
	}
	l.cs = cs
	l.cancel = cancel
	go func() {
		err := cs.Wait()
		if isSessionMissing(err) {
			l.cause = fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, err, "the server ended the session (HTTP 404)")
		} else {
			l.cause = fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the %s connection to %s closed: %s", kind, s.redact.String(s.cfg.URL), describe(err))
		}
		close(l.done)
	}()
	return l, nil, false
}
