package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// link is one live connection to the server: what a successful dial
// produces and a drop or Shutdown destroys. Links are never reused; every
// reconnect makes a new one (transports are single-use).
type link struct {
	cs        *mcp.ClientSession
	transport sb.Transport
	proc      *process           // stdio only
	cancel    context.CancelFunc // ends the link's context (the SSE stream)
	catalog   catalog            // owned by the lifecycle goroutine

	listChanged chan listKind // list_changed notifications, coalesced
	oversized   atomic.Bool   // the server sent a stdio frame over the size cap
	expired     chan struct{} // closed by expire: the server forgot the session
	expireOnce  sync.Once

	done  chan struct{} // closed when the connection has ended on its own
	cause *failure      // why; valid once done is closed
}

// listKind is a set of lists to refresh.
type listKind uint8

const (
	listTools listKind = 1 << iota
	listResources
	listPrompts
	listAll = listTools | listResources | listPrompts
)

func newLink(t sb.Transport) *link {
	return &link{transport: t, listChanged: make(chan listKind, 1), expired: make(chan struct{}),
		done: make(chan struct{}), cancel: func() {}}
}

// alive reports whether the link can still carry a call: it has not ended
// and the server has not forgotten its session.
func (l *link) alive() bool {
	select {
	case <-l.done:
		return false
	case <-l.expired:
		return false
	default:
		return true
	}
}

// sessionGone reports whether the server is known to have forgotten the
// link's session.
func (l *link) sessionGone() bool {
	select {
	case <-l.expired:
		return true
	case <-l.done:
		return l.cause != nil && l.cause.code == sb.CodeSessionExpired
	default:
		return false
	}
}

// expire reports that the server no longer knows this link's session (HTTP
// 404). However many callers report it, the link is dropped and replaced
// once.
func (l *link) expire() { l.expireOnce.Do(func() { close(l.expired) }) }

// notify records a list_changed notification without blocking the SDK's
// notification goroutine: pending kinds are merged.
func (l *link) notify(k listKind) {
	for {
		select {
		case l.listChanged <- k:
			return
		default:
		}
		select {
		case old := <-l.listChanged:
			k |= old
		default:
		}
	}
}

// closeTimeout bounds closing the MCP session; for Streamable HTTP that
// includes the go-sdk's DELETE request.
const closeTimeout = 2 * time.Second

// close tears the link down: the MCP session, the HTTP streams, and the
// stdio process group. It returns when they are gone, within the bounds of
// closeTimeout and process.stop.
//
// A link known to be dead skips the polite goodbye (the Streamable HTTP
// DELETE) that would only wait on it. A link whose session the server
// forgot keeps its HTTP requests for closeTimeout more: the ones still in
// flight get their own 404 at once, which tells their callers that they
// never ran; aborting them would leave that unknown.
func (l *link) close(how closeMode) {
	if how == closeDead {
		l.cancel()
	}
	if l.cs != nil {
		closed := make(chan struct{})
		go func() {
			l.cs.Close()
			close(closed)
		}()
		t := time.NewTimer(closeTimeout)
		select {
		case <-closed:
		case <-t.C:
		}
		t.Stop()
	}
	if how == closeExpired {
		time.AfterFunc(closeTimeout, l.cancel)
	} else {
		l.cancel()
	}
	if l.proc != nil {
		l.proc.stop()
	}
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}

// closeMode says how a link is closed.
type closeMode int

const (
	closePolite  closeMode = iota // shutdown or restart: say goodbye
	closeDead                     // the connection failed: abort everything first
	closeExpired                  // the server forgot the session: let requests in flight finish
)

// newClient builds the go-sdk client for one link, with its notification
// handlers bound to that link.
func (s *Session) newClient(l *link) *mcp.Client {
	c := mcp.NewClient(&s.opts.ClientInfo, &mcp.ClientOptions{
		// No roots: Switchboard has no files to offer its upstreams.
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { l.notify(listTools) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { l.notify(listResources) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { l.notify(listPrompts) },
		ElicitationHandler:         s.onElicit,
		CreateMessageHandler:       s.onSample,
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s.log.Debug("upstream log message", "level", r.Params.Level, "logger", r.Params.Logger)
			s.notify(r.Params)
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { s.notify(r.Params) },
	})
	if s.cfg.ProtocolVersion == "" && !s.cfg.IsStdio() {
		c.AddSendingMiddleware(boundDiscover)
	}
	c.AddReceivingMiddleware(s.relayUnvalidatedElicitation)
	return c
}

type elicitInvokedKey struct{}

// relayUnvalidatedElicitation lets an elicitation through that the go-sdk
// would refuse before any handler saw it. The go-sdk checks form schemas
// against its own reading of the spec (it rejects, for instance, untitled
// enums written with anyOf, which the conformance suite sends); Switchboard
// relays elicitations to a client that does its own checking, and a relay
// must not be stricter than the two ends. Schemas the go-sdk accepts still
// go through it, so that it applies their defaults to the answer.
func (s *Session) relayUnvalidatedElicitation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "elicitation/create" {
			return next(ctx, method, req)
		}
		invoked := new(bool)
		res, err := next(context.WithValue(ctx, elicitInvokedKey{}, invoked), method, req)
		if err == nil || *invoked {
			return res, err
		}
		er, ok := req.(*mcp.ElicitRequest)
		if !ok || (er.Params.Mode != "" && er.Params.Mode != "form") {
			return res, err
		}
		s.log.Debug("relaying an elicitation whose schema the go-sdk refused", "error", err)
		return s.onElicit(ctx, er)
	}
}

// notify passes a notification that is not about one call to
// Options.OnNotification.
func (s *Session) notify(p mcp.Params) {
	if s.opts.OnNotification != nil {
		s.opts.OnNotification(s.cfg.Name, p)
	}
}

// dialStdio starts the server process and performs the MCP handshake.
//
// The handshake may take as long as the startup timeout while the process
// lives: a package manager (npx, uvx) installing for tens of seconds is a
// cold start, not a failure, and killing it to try again would only start
// the installation over (LangBot's cold-start loop). A process that exits
// fails the attempt at once.
func (s *Session) dialStdio(ctx context.Context) (*link, *failure) {
	proc, f := startProcess(s.cfg, s.logs)
	if f != nil {
		return nil, f
	}
	l := newLink(sb.TransportStdio)
	l.proc = proc
	hctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-proc.exited:
			// Let Connect fail with its own error first (the closed pipe,
			// or the malformed JSON that made the go-sdk close it); cancel
			// only if a grandchild holding stdout open keeps it waiting.
			t := time.NewTimer(exitReapGrace)
			defer t.Stop()
			select {
			case <-t.C:
				cancel(errProcessExited)
			case <-hctx.Done():
			}
		case <-hctx.Done():
		}
	}()
	cs, err := s.newClient(l).Connect(hctx, s.ioTransport(l, proc.stdout, proc.stdin), s.sessionOptions())
	cancel(nil)
	if err != nil {
		// Did it exit on its own, before we stop it below? Only a closed
		// pipe says so; other errors (malformed JSON) make the go-sdk close
		// the server's stdin, and the exit that follows is ours. A closed
		// pipe is usually seen a moment before the exit is reaped, so give
		// the reaper a moment.
		exited := false
		if isConnectionError(err) && ctx.Err() == nil {
			exited = proc.waitExit(exitReapGrace)
		}
		proc.stop()
		switch {
		case exited:
			return nil, s.exitFailure(sb.PhaseSpawn, proc, "before completing the MCP handshake")
		case context.Cause(ctx) == errAttemptTimeout:
			return nil, fail(sb.PhaseInitialize, sb.CodeTimeout, retryFast, err,
				"%s (pid %d) did not answer initialize within the %s startup timeout%s",
				s.cfg.Command, proc.pid, s.cfg.StartupTimeout(), s.stderrHint())
		}
		return nil, fail(sb.PhaseInitialize, sb.CodeInitializeFailed, retryFast, err,
			"the MCP handshake with %s failed: %s%s", s.cfg.Command, describe(err), s.stderrHint())
	}
	l.cs = cs
	go s.watchStdio(l)
	return l, nil
}

var errProcessExited = errors.New("process exited")

// watchStdio waits for the process to exit or the connection to close,
// records why, and closes l.done. An exit fails in-flight calls at once by
// closing the MCP session.
func (s *Session) watchStdio(l *link) {
	waitErr := make(chan error, 1)
	go func() { waitErr <- l.cs.Wait() }()
	select {
	case <-l.proc.exited:
		l.cs.Close()
		<-waitErr
	case err := <-waitErr:
		// A closed stdout usually means the process is exiting; give it a
		// moment so the cause names the exit status.
		if !l.proc.waitExit(exitReapGrace) {
			l.cause = fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the connection to %s (pid %d) closed: %s%s", s.cfg.Command, l.proc.pid, describe(err), s.stderrHint())
		}
	}
	if l.cause == nil {
		l.cause = s.exitFailure(sb.PhaseRuntime, l.proc, "")
	}
	close(l.done)
}

func (s *Session) exitFailure(phase sb.Phase, p *process, when string) *failure {
	<-p.exited
	msg := fmt.Sprintf("%s (pid %d) %s", s.cfg.Command, p.pid, exitDescription(p.exitErr))
	if when != "" {
		msg += " " + when
	}
	return fail(phase, sb.CodeProcessExited, retryFast, p.exitErr, "%s%s", msg, s.stderrHint())
}

// stderrHint quotes the server's last stderr line, which usually names the
// real problem ("Error: Cannot find module ...").
func (s *Session) stderrHint() string {
	last := s.logs.Tail(1)
	if len(last) == 0 || strings.TrimSpace(last[0]) == "" {
		return ""
	}
	line := last[0]
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return "; last stderr line: " + line
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
	hc := &http.Client{Transport: &roundTripper{base: sharedTransport, headers: s.cfg.Headers, linkCtx: lctx, onSSE: s.onWire}}
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

// ioTransport speaks newline-delimited JSON-RPC over r and w, with the
// progress tap on r and frames bounded by the result size cap. The go-sdk
// ends the connection on an oversized frame without saying so in a way a
// caller can test; the tap notes it on the link.
func (s *Session) ioTransport(l *link, r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	limit := s.opts.MaxResultBytes + frameOverhead
	return &mcp.IOTransport{
		Reader:        &lineTap{r: r, fn: s.onWire, maxLine: limit, onOversize: func() { l.oversized.Store(true) }},
		Writer:        w,
		MaxLineLength: limit,
	}
}

// dialCustom connects over the byte stream of Options.Dial.
func (s *Session) dialCustom(ctx context.Context) (*link, *failure) {
	rwc, err := s.opts.Dial(ctx)
	if err != nil {
		return nil, fail(sb.PhaseConnect, sb.CodeDialFailed, retryFast, err, "dialing: %v", err)
	}
	l := newLink(sb.TransportInProcess)
	cs, err := s.newClient(l).Connect(ctx, s.ioTransport(l, rwc, rwc), s.sessionOptions())
	if err != nil {
		rwc.Close()
		return nil, fail(sb.PhaseInitialize, sb.CodeInitializeFailed, retryFast, err, "the MCP handshake failed: %s", describe(err))
	}
	l.cs = cs
	go func() {
		err := cs.Wait()
		l.cause = fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err, "the connection closed: %s", describe(err))
		close(l.done)
	}()
	return l, nil
}
