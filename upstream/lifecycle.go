package upstream

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/telemetry"
	"github.com/switchboard-mcp/switchboard/wire"
)

// run is the session's lifecycle goroutine: the only goroutine that dials,
// serves and closes connections, and the only writer of s.link. It returns
// when runCtx ends (Shutdown), after closing everything it opened.
func (s *Session) run() {
	defer close(s.done)
	// A shut-down session runs nothing, which is what disabled means. A
	// link that Shutdown interrupted (cycle) has been torn down by now; it
	// leaves with the status that it stood for.
	defer s.update(sb.ReasonStopped, func(m *machine) {
		s.setLink(nil)
		m.status = sb.StatusDisabled
		m.nextRetryAt = time.Time{}
	})
	ctx := s.runCtx
	for ctx.Err() == nil {
		wait, retry := s.cycle(ctx)
		if ctx.Err() != nil {
			return
		}
		if retry && wait <= 0 {
			continue
		}
		// Without retry, only a Restart (or Shutdown) moves the session on.
		var timer *time.Timer
		var expired <-chan time.Time
		if retry {
			timer = time.NewTimer(wait)
			expired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-expired:
		case <-s.restart:
			s.update(sb.ReasonRestarted, (*machine).restarted)
		case <-s.retryNow:
			s.update(sb.ReasonRestarted, (*machine).restarted)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// cycle makes one connection attempt and, if it succeeds, serves the
// connection until it drops. It returns how long to wait before the next
// attempt, and false if no attempt should be made without a restart.
//
// The lifecycle goroutine idles in serve for as long as the session is
// connected, under run and cycle: their frames are what every idle
// session's stack holds, and the runtime halves a stack that connecting
// grew only while less than a quarter of it is in use. So cycle is kept to
// three calls, the attempt and the teardown in functions of their own: a
// cycle that did it all (328 bytes of frame, not 56) kept an 8 KiB stack
// per connected server where 4 KiB do (17.9 → 13.0 MB of goroutine stacks
// for 1,000 stdio servers; BENCHMARKS.md §6b, round six).
func (s *Session) cycle(ctx context.Context) (wait time.Duration, retry bool) {
	l, wait, retry := s.attempt(ctx)
	if l == nil {
		return wait, retry
	}
	return s.teardown(ctx, l, s.serve(ctx, l))
}

// attempt makes one connection attempt: the link, or, if it failed, how
// long to wait before the next one and whether to make one.
func (s *Session) attempt(ctx context.Context) (l *link, wait time.Duration, retry bool) {
	s.update(sb.ReasonStarting, (*machine).attemptStarted)

	sctx, span := s.attemptSpan(ctx)
	l, f := s.dial(sctx)
	if span.IsRecording() {
		endAttemptSpan(span, l, f)
	}
	if f != nil {
		if ctx.Err() != nil {
			return nil, 0, false
		}
		f = f.scrubbed(s.redact)
		s.update(sb.ReasonAttemptFailed, func(m *machine) { wait, retry = m.attemptFailed(time.Now(), f) })
		return nil, wait, retry
	}
	if ctx.Err() != nil {
		// Shut down while dialing: the requests the dial does without
		// (logging/setLevel, resources, prompts, subscriptions) failed
		// with the context, and it returned a link that nothing may use.
		l.close(closePolite, shutdownCause())
		return nil, 0, false
	}

	s.update(sb.ReasonConnected, func(m *machine) {
		s.setLink(l)
		m.connected(time.Now())
	})
	return l, 0, false
}

// teardown reports and tears down a link that serve gave up for cause, and
// returns how long to wait before the next attempt and whether to make
// one.
func (s *Session) teardown(ctx context.Context, l *link, cause *failure) (wait time.Duration, retry bool) {
	switch {
	case ctx.Err() != nil:
		// Shutdown: the link stays the session's while it is torn down,
		// and goes with the stopped transition (run).
		l.close(closePolite, shutdownCause())
		return 0, false
	case errors.Is(cause, errRestart):
		s.update(sb.ReasonRestarted, func(m *machine) {
			s.setLink(nil)
			m.restarted()
		})
		l.close(closePolite, fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, errRestart,
			"closed by Switchboard: the session was restarted"))
		return 0, true
	}
	// Report the drop before the (bounded) teardown, so that watchers learn
	// of it when it happened; the next attempt still waits for the teardown.
	cause = cause.scrubbed(s.redact)
	s.update(sb.ReasonDropped, func(m *machine) {
		s.setLink(nil)
		wait, retry = m.dropped(time.Now(), cause)
	})
	if cause.code == sb.CodeSessionExpired {
		l.close(closeExpired, cause)
	} else {
		l.close(closeDead, l.dropCause(cause))
	}
	return wait, retry
}

// setLink makes l the session's live link, with its lists; nil leaves the
// session with neither. It is called only inside the update that makes the
// matching transition, under s.mu: a reader (Info, current) sees the status
// and the link change in one step, never "connected" with no link (no pid,
// no tools) nor "connecting" with the tools of a link not yet announced.
func (s *Session) setLink(l *link) {
	s.link = l
	s.catalog = catalog{}
	if l != nil {
		s.catalog = l.catalog
		select {
		case <-s.retryNow: // asked for while connecting: it connected
		default:
		}
	}
}

// dial connects and discovers within the startup timeout.
func (s *Session) dial(ctx context.Context) (*link, *failure) {
	if s.bad != nil {
		return nil, s.bad
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.StartupTimeout(), errAttemptTimeout)
	defer cancel()
	var (
		l *link
		f *failure
	)
	switch {
	case s.opts.Dial != nil:
		l, f = s.dialCustom(ctx)
	case s.cfg.Transport == sb.TransportStdio:
		l, f = s.dialStdio(ctx)
	case s.cfg.Transport == sb.TransportStreamableHTTP:
		l, f, _ = s.dialHTTP(ctx, sb.TransportStreamableHTTP)
	case s.cfg.Transport == sb.TransportSSE:
		l, f, _ = s.dialHTTP(ctx, sb.TransportSSE)
	case s.cfg.Transport == sb.TransportRemote:
		l, f = s.dialRemote(ctx)
	default:
		return nil, fail(sb.PhaseConfig, sb.CodeBadTransport, retryNever, nil, "unknown transport %q", s.cfg.Transport)
	}
	if f != nil {
		return nil, f
	}
	// What the session keeps of the server's introduction is bounded the
	// same way whatever carried it.
	trimInitializeResult(l.cs.InitializeResult())
	telemetry.Event(ctx, "initialized")
	if f := s.discover(ctx, l); f != nil {
		l.close(closeDead, f)
		return nil, f
	}
	s.resubscribe(ctx, l)
	return l, nil
}

var errAttemptTimeout = errors.New("attempt timed out")

// serve watches a live connection until it drops, the session is restarted
// or shut down. It refreshes the lists on list_changed notifications and
// probes the server's health: a remote server can vanish without closing
// anything, and a stdio process can live on without answering (stopped,
// deadlocked). It returns why the connection ended.
func (s *Session) serve(ctx context.Context, l *link) *failure {
	var health <-chan time.Time
	if s.opts.HealthInterval > 0 {
		t := time.NewTicker(s.opts.HealthInterval)
		defer t.Stop()
		health = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.restart:
			return &failure{err: errRestart}
		case <-l.done:
			return l.cause
		case <-l.expired:
			return fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, mcp.ErrSessionMissing,
				"the server ended the session (HTTP 404)")
		case <-l.dead:
			return l.deadCause
		case kinds := <-l.listChanged:
			if kinds&probeSoon != 0 {
				if f := s.probe(ctx, l); f != nil {
					return f
				}
			}
			if kinds &= listAll; kinds != 0 {
				s.refresh(ctx, l, kinds)
			}
		case <-health:
			if f := s.probe(ctx, l); f != nil {
				return f
			}
		}
	}
}

// probe checks that the server still answers. Only a probe that gets
// no answer (timeout, closed connection, the session forgotten by the
// server) means down: a 401 or 429 is an answer from a live server, and
// tearing the session down for it would make things worse.
func (s *Session) probe(ctx context.Context, l *link) *failure {
	pctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
	defer cancel()
	req := &wire.Request{Method: "ping"}
	if l.version >= protocol20260728 {
		// The 2026-07-28 protocol has no ping; a one-page list is the
		// cheapest request every server answers.
		req = &wire.Request{Method: "tools/list", Params: append(append([]byte(`{"_meta":{`), l.newMeta...), "}}"...)}
	}
	// A probe sent while a call is in flight may wait behind it on a
	// server that runs one request at a time, even if that call has ended
	// (its own timeout) by the time the probe gives up.
	busy := s.inflight.Load() > 0
	_, err := l.conn.Call(pctx, req)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	busy = busy || s.inflight.Load() > 0
	we, _ := wire.AsError(err)
	status := 0
	if we != nil {
		status = we.Status
	}
	switch {
	case we != nil && we.Kind == wire.KindSessionMissing:
		return fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, err, "the server ended the session (HTTP 404)")
	case status == 400:
		// A ping has nothing in it to refuse: servers that answer a
		// session they do not know with 400 (the Python SDK's, the
		// TypeScript SDK's examples) mean the session is gone.
		return fail(sb.PhaseRuntime, sb.CodeSessionExpired, retryFast, err,
			"the server refused the session's health probe with HTTP 400: it no longer knows the session")
	case status == 401:
		// The credentials stopped working: the link is dropped, and the
		// attempt that follows says auth (and waits for a person).
		return fail(sb.PhaseAuth, sb.HTTPStatus(status), retryFast, err, "the server refused the session's credentials (HTTP 401)")
	case status == 403 || status == 429:
		s.log.Warn("health probe answered with an HTTP error; not treating the server as down", "status", status)
		return nil
	case status >= 400:
		s.log.Warn("health probe answered with an HTTP error", "status", status)
		return nil
	case we != nil && we.Kind == wire.KindRPC:
		return nil // the server answered, if only to say it has no ping
	case pctx.Err() != nil && l.proc != nil && busy:
		// A stdio server that runs one request at a time is busy, not
		// hung, while a call is in flight; the call has its own timeout.
		s.log.Warn("health probe got no answer while calls are in flight; not treating the server as hung", "timeout", s.opts.ProbeTimeout)
		return nil
	case pctx.Err() != nil:
		return fail(sb.PhaseRuntime, sb.CodeProbeTimeout, retryFast, err, "health probe got no answer within %s", s.opts.ProbeTimeout)
	}
	return fail(sb.PhaseRuntime, sb.CodeProbeFailed, retryFast, err, "health probe failed: %s", describe(err))
}

// refresh re-lists what a list_changed notification said has changed.
func (s *Session) refresh(ctx context.Context, l *link, kinds listKind) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
	defer cancel()
	r, err := l.list(rctx, kinds, l.catalog)
	if err == nil {
		err = r.err
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return // shutting down (every check ends so): nothing failed, nothing to keep
	case err != nil:
		s.log.Warn("refreshing lists after list_changed failed", "error", s.redact.String(err.Error()))
	}
	s.warnTruncated(r)
	l.catalog = r.catalog
	s.update(sb.ReasonToolsChanged, func(*machine) { s.setLink(l) })
}

// autoProtocol reports whether the session lets the go-sdk pick the
// protocol version with its server/discover probe, which boundDiscover
// bounds: a remote server whose config pins no version.
func (s *Session) autoProtocol() bool {
	return s.cfg.ProtocolVersion == "" && !s.cfg.IsStdio()
}

// classicProtocol is the newest protocol version negotiated through the
// initialize handshake alone.
const classicProtocol = "2025-11-25"

// sessionOptions picks the protocol version to offer. A pinned version is
// used as is. "Auto" differs by transport:
//
//   - Remote servers get the SDK's newest version, whose server/discover
//     probe (2026-07-28) is bounded by boundDiscover: a discover POST that
//     goes unanswered costs nothing but the wait.
//   - Stdio servers go straight to initialize at classicProtocol. On a
//     single pipe an abandoned probe is not harmless: a server that is still
//     cold-starting (npx installing) reads the probe late, answers it, and
//     then refuses the initialize that followed as a duplicate.
func (s *Session) sessionOptions() *mcp.ClientSessionOptions {
	v := s.cfg.ProtocolVersion
	if v == "" && s.cfg.IsStdio() {
		v = classicProtocol
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: v}
}

// discoverProbeTimeout bounds the automatic server/discover probe. The
// go-sdk sends it with no timeout of its own, and a server that ignores
// unknown methods never answers; after this long the SDK falls back to the
// classic initialize handshake.
const discoverProbeTimeout = 3 * time.Second

// boundDiscover is a sending middleware that applies discoverProbeTimeout.
// It applies only when the protocol version is automatic (autoProtocol).
func boundDiscover(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "server/discover" {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, discoverProbeTimeout)
			defer cancel()
		}
		return next(ctx, method, req)
	}
}
