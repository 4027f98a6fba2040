package upstream

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
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
// 404 or 405, the session-missing error the go-sdk maps a 404 to, or a web
// page (an HTML answer with a success status: whatever it is, it is not
// Streamable HTTP, and a "remote" server should say so only after trying
// SSE too). Never on 401/403/406/415/429/5xx, timeouts or refused
// connections.
func (s *Session) dialHTTP(ctx context.Context, kind sb.Transport) (l *link, f *failure, fallback bool) {
	if f := s.oauthGate(ctx); f != nil {
		return nil, f, false
	}
	l = newLink(kind)
	// The link's context lives as long as the link: the legacy SSE client
	// ties its stream to the context given to Connect, and every request of
	// the link ends with it. The attempt's deadline is enforced by cancelling
	// it if Connect has not returned by then.
	lctx, cancel := context.WithCancel(s.runCtx)
	lctx, rec := withStatusRecorder(lctx)
	endpoint := s.redact.String(s.cfg.URL)
	host := hostOf(endpoint)
	limit := s.opts.MaxResultBytes + frameOverhead
	// A request refused for safety fails the attempt with its own reason,
	// whatever the go-sdk makes of the failed request.
	var refusal first[*failure]
	guard := egress.NewOriginGuard(s.cfg.URL, s.redact.String, func(e *egress.RedirectError) {
		refusal.put(fail(sb.PhaseConnect, sb.CodeRedirect, retrySlow, e,
			"%s: %v (if the server has moved there, configure that URL)", endpoint, e))
	})
	via := s.opts.Instance
	rt := &roundTripper{base: s.opts.Egress.Transport(), headers: s.cfg.Headers, guard: guard,
		via: via, reach: via.Track(lctx, s.cfg.Name), linkCtx: lctx, onSSE: s.onWire,
		onRefused: func(err error) {
			l.markDead(fail(sb.PhaseRuntime, sb.CodeConnectionRefused, retryFast, err,
				"connection refused by %s: the server is no longer running", host))
		},
		onBlocked: func(err *egress.BlockedAddressError) {
			refusal.put(fail(sb.PhaseConnect, sb.CodeBlockedAddress, retrySlow, err, "%s: %v", endpoint, err))
		},
		limit: limit, log: s.log}
	// The first context of an event stream that ends when the connection
	// does (see watch below).
	var connEnd first[context.Context]
	rt.onStream = func(sdk, own context.Context) {
		if kind == sb.TransportSSE {
			connEnd.put(own)
		} else {
			connEnd.put(sdk)
		}
	}
	if kind == sb.TransportSSE {
		rt.captures = &streamCaptures{}
		// The one event stream carries every answer: one that cannot be
		// told apart may be the one a call waits for (bodylimit.go).
		rt.onUnknown = func() {
			l.markDead(fail(sb.PhaseRuntime, sb.CodeResultTooLarge, retryFast, ErrResultTooLarge,
				"the server sent a message over the %d-byte limit; the connection was reset", limit))
			l.sharedBlame.Store(l.calls.Load() > 1)
			l.oversized.Store(true) // last: it publishes the two above
		}
	}
	pages := &pageRecorder{base: rt}
	refusals := messageRefusals{base: pages, sse: kind == sb.TransportSSE}
	hc := &http.Client{Transport: s.withOAuth(refusals), CheckRedirect: guard.CheckRedirect}
	// MaxEventSize: the round-tripper bounds every event at limit already.
	// It is set all the same: the go-sdk's Streamable HTTP client takes
	// its zero value for "no limit" (v1.8.0), not for its default.
	var t mcp.Transport
	if kind == sb.TransportSSE {
		t = &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: limit + eventSlack}
	} else {
		// MaxRetries: the go-sdk's own stream reconnection. Keep its default;
		// the health probe and our reconnect cover what it gives up on.
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: limit + eventSlack}
	}

	stop := context.AfterFunc(ctx, cancel)
	cs, err := s.connect(lctx, l, t)
	if !stop() && err == nil {
		cs.Close() // connected just as the deadline passed; treat as timed out
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel()
		l.forget()
		if f := refusal.get(); f != nil {
			return nil, f, false
		}
		status, page := rec.Status(), pages.Status()
		if status != 0 && page != status {
			// The attempt failed on an error status of another answer: the
			// page was one the go-sdk ignores, such as a proxy's answer to
			// the standalone stream's GET (go-sdk#736).
			page = 0
		}
		if kind == sb.TransportStreamableHTTP && (status == 400 || status == 404 || status == 405 ||
			errors.Is(err, mcp.ErrSessionMissing) || (page != 0 && page < 400)) {
			fallback = true
		}
		if ctx.Err() != nil && status == 0 && page == 0 {
			return nil, fail(sb.PhaseInitialize, sb.CodeTimeout, retryFast, err,
				"%s did not complete the MCP handshake within the %s startup timeout", endpoint, s.cfg.StartupTimeout()), fallback
		}
		phase := sb.PhaseInitialize
		if status != 0 {
			phase = sb.PhaseConnect
		}
		return nil, s.oauthFailure(classifyRemote(phase, endpoint, status, page, err), err), fallback
	}
	l.cs = cs
	l.cancel = cancel
	watch := func() {
		err := cs.Wait()
		l.ended(func() *failure {
			if isSessionMissing(err) {
				return fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, err, "the server ended the session (HTTP 404)")
			}
			return fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the %s connection to %s closed: %s", kind, s.redact.String(s.cfg.URL), describe(err))
		})
	}
	// The go-sdk tells of the connection's end only through Wait. A
	// goroutine blocked in it for the connection's life costs a stack (4
	// KiB) per idle session; the connection's event stream says it sooner,
	// without one, through a context that ends no later than the
	// connection (the go-sdk closes the connection, whatever ends it,
	// before Wait returns):
	//   - Streamable HTTP: the go-sdk sends its standalone stream's GET
	//     (during Connect) under the connection's own context, which its
	//     Close cancels; its JSON-RPC connection calls Close when reading
	//     fails, and Close is what ours calls.
	//   - Legacy SSE: the connection is its one stream; the go-sdk closes
	//     the stream's body when the stream ends and when it is closed,
	//     which ends the request's own context.
	// Wait then returns at once. A context that ends sooner (a standalone
	// stream's GET that was not the go-sdk's first), or none seen (a
	// protocol without a standalone stream), only means waiting from then
	// on, as before.
	if end := connEnd.get(); end != nil {
		context.AfterFunc(end, watch)
	} else {
		go watch()
	}
	return l, nil, false
}

// pageRecorder notes the status of the last web page (an HTML answer) that a
// request of a connection attempt got. The go-sdk reads such a page as
// whatever it expected to find: a "malformed line in SSE stream", a body of
// an unsupported content type that ends the session ("the server closed
// the connection"), or a bare status. Only the Content-Type tells that the
// URL is a web site's page, not a broken MCP server. It wraps the
// roundTripper rather than living in it because it is about what a
// connection attempt saw, not about how requests are made.
type pageRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	status int
}

func (p *pageRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(req)
	// Unlike the statusRecorder, it also counts the server/discover probe,
	// whose failures are expected: an older MCP server may refuse it with a
	// status, but no MCP server answers it with a web page. And a page of
	// type text/html with status 200 is all that answers when the URL is a
	// web site's: the go-sdk takes the probe's unexpected content type for a
	// broken connection, and sends no initialize at all.
	if err == nil && isWebPage(resp.Header.Get("Content-Type")) {
		p.mu.Lock()
		p.status = resp.StatusCode
		p.mu.Unlock()
	}
	return resp, err
}

// Status returns the HTTP status of the last web page seen, or 0.
func (p *pageRecorder) Status() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// isWebPage reports whether contentType is that of a web page. An MCP
// server answers with JSON or an event stream, never HTML.
func isWebPage(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// first keeps the first value reported to it, from any goroutine.
type first[T any] struct {
	mu  sync.Mutex
	v   T
	set bool
}

func (f *first[T]) put(v T) {
	f.mu.Lock()
	if !f.set {
		f.v, f.set = v, true
	}
	f.mu.Unlock()
}

// get returns the first value reported, or T's zero value.
func (f *first[T]) get() T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v
}
