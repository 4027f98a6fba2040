package upstream

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/wire"
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

// dialHTTP connects over Streamable HTTP or legacy SSE, on a connection of
// the wire's (wire.Streamable, wire.SSE). For Streamable HTTP it also
// reports whether the answer calls for the SSE fallback: HTTP 400, 404 or
// 405, or a web page (an answer that is not MCP with a success status:
// whatever it is, it is not Streamable HTTP, and a "remote" server should
// say so only after trying SSE too). Never on 401/403/406/415/429/5xx,
// timeouts or refused connections.
func (s *Session) dialHTTP(ctx context.Context, kind sb.Transport) (l *link, f *failure, fallback bool) {
	if f := s.oauthGate(ctx); f != nil {
		return nil, f, false
	}
	l = newLink(kind)
	// The link's context lives as long as the link: every request of the
	// link ends with it. The attempt's deadline is enforced by cancelling
	// it if Connect has not returned by then.
	lctx, cancel := context.WithCancel(s.runCtx)
	endpoint := s.redact.String(s.cfg.URL)
	limit := s.opts.MaxResultBytes + frameOverhead
	// A request refused for safety fails the attempt with its own reason,
	// whatever the handshake makes of the failed request.
	var refusal first[*failure]
	guard := egress.NewOriginGuard(s.cfg.URL, s.redact.String, func(e *egress.RedirectError) {
		refusal.put(fail(sb.PhaseConnect, sb.CodeRedirect, retrySlow, e,
			"%s: %v (if the server has moved there, configure that URL)", endpoint, e))
	})
	via := s.opts.Instance
	rt := &roundTripper{base: s.opts.Egress.Transport(), headers: s.cfg.Headers, guard: guard,
		via: via, reach: via.Track(lctx, s.cfg.Name), linkCtx: lctx,
		onRefused: func(err error) {
			l.markDead(fail(sb.PhaseRuntime, sb.CodeConnectionRefused, retryFast, err,
				"connection refused by %s: the server is no longer running", hostOf(endpoint)))
		},
		onBlocked: func(err *egress.BlockedAddressError) {
			refusal.put(fail(sb.PhaseConnect, sb.CodeBlockedAddress, retrySlow, err, "%s: %v", endpoint, err))
		}}
	hc := &http.Client{Transport: s.withOAuth(rt), CheckRedirect: guard.CheckRedirect}
	ending := &onEnd{}
	wopts := &wire.Options{Limit: limit, OnMessage: s.onWire, OnEnd: ending.run, Logger: s.log}

	var err error
	if kind == sb.TransportSSE {
		var c *wire.SSE
		dctx, stopDial := context.WithCancel(lctx)
		stopAttempt := context.AfterFunc(ctx, stopDial)
		c, err = wire.DialSSE(dctx, s.cfg.URL, hc, wopts)
		stopAttempt()
		if err == nil {
			l.conn = c
		}
	} else {
		l.conn = wire.NewStreamable(s.cfg.URL, hc, wopts)
	}
	var cs *mcp.ClientSession
	if err == nil {
		stop := context.AfterFunc(ctx, cancel)
		cs, err = s.connect(lctx, l, wire.Transport{C: l.conn})
		if !stop() && err == nil {
			cs.Close() // connected just as the deadline passed; treat as timed out
			err = context.Cause(ctx)
		}
	}
	if err != nil {
		if l.conn != nil {
			l.conn.Close()
		}
		cancel()
		l.forget()
		if f := refusal.get(); f != nil {
			return nil, f, false
		}
		var re *egress.RedirectError
		if errors.As(err, &re) {
			re.To = s.redact.String(re.To)
			return nil, fail(sb.PhaseConnect, sb.CodeRedirect, retrySlow, re,
				"%s: %v (if the server has moved there, configure that URL)", endpoint, re), false
		}
		status, page := 0, 0
		if we, ok := wire.AsError(cmp.Or(err, l.connErr())); ok {
			switch {
			case we.Page:
				page = we.Status // a web page where MCP was expected
				if page >= 400 {
					status = page
				}
			case we.Kind == wire.KindSessionMissing:
				status = http.StatusNotFound
			case we.Kind == wire.KindStatus:
				status = we.Status
			case we.Kind == wire.KindRefused || we.Kind == wire.KindTransport:
				err = we.Err // the client's own error: a refused connection, a DNS failure, a timeout
			}
		}
		if kind == sb.TransportStreamableHTTP && (status == 400 || status == 404 || status == 405 || (page != 0 && page < 400)) {
			fallback = true
		}
		if ctx.Err() != nil && status == 0 && page == 0 {
			return nil, fail(sb.PhaseInitialize, sb.CodeTimeout, retryFast, err,
				"%s did not complete the MCP handshake within the %s startup timeout", endpoint, s.cfg.StartupTimeout()), fallback
		}
		phase := sb.PhaseInitialize
		if status != 0 || page != 0 {
			phase = sb.PhaseConnect
		}
		return nil, s.oauthFailure(classifyRemote(phase, endpoint, status, page, err), err), fallback
	}
	l.cs = cs
	l.cancel = cancel
	// The connection tells of its end (wire.Options.OnEnd): no goroutine
	// waits for it through an idle session's life.
	watch := func() {
		cs.Close()
		err := cs.Wait()
		l.ended(func() *failure {
			if we, ok := wire.AsError(l.conn.Err()); ok && we.Kind == wire.KindSessionMissing {
				return fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, we, "the server ended the session (HTTP 404)")
			}
			if cerr := l.conn.Err(); cerr != nil {
				err = cerr
			}
			return fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the %s connection to %s closed: %s", kind, s.redact.String(s.cfg.URL), describe(err))
		})
	}
	if !ending.set(watch) {
		go watch() // it ended during the handshake
	}
	return l, nil, false
}

// onEnd runs a function set after the connection was made when the
// connection ends (wire.Options.OnEnd, which is set before).
type onEnd struct {
	mu    sync.Mutex
	fn    func()
	ended bool
}

// set arranges for fn to run at the end, and reports false if the end has
// come already (fn is then the caller's to run).
func (e *onEnd) set(fn func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false
	}
	e.fn = fn
	return true
}

func (e *onEnd) run() {
	e.mu.Lock()
	e.ended = true
	fn := e.fn
	e.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// connErr is why the link's connection ended, if it has.
func (l *link) connErr() error {
	if l.conn == nil {
		return nil
	}
	select {
	case <-l.conn.Done():
		return l.conn.Err()
	default:
		return nil
	}
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
