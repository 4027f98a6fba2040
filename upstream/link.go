package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/wire"
)

// This file is the link: one live connection to the server, whichever
// transport carries it, and its go-sdk session (of the client every link
// shares: client.go). Links are made by the dialers: dialStdio (stdio.go),
// dialHTTP (remote.go) and dialCustom (transport.go).

// link is one live connection to the server: what a successful dial
// produces and a drop or Shutdown destroys. Links are never reused; every
// reconnect makes a new one (transports are single-use).
type link struct {
	cs        *mcp.ClientSession
	transport sb.Transport
	proc      *process           // stdio only
	conn      wire.Conn          // the link's own connection: carries calls and lists as bytes (byte streams, for now)
	version   string             // the protocol version negotiated
	newMeta   []byte             // from 2026-07-28 on: the _meta members every request carries (requestMeta)
	cancel    context.CancelFunc // ends the link's context (the SSE stream)
	session   *Session           // whose link it is, for the shared client's handlers (client.go)
	catalog   catalog            // owned by the lifecycle goroutine

	listChanged chan listKind // list_changed notifications and probeSoon, coalesced
	calls       atomic.Int64  // tool calls in flight on this link
	sharedBlame atomic.Bool   // other calls were in flight when the oversized frame came
	blameOnce   sync.Once     // sets sharedBlame, for the first call that learns of the oversized message
	expired     chan struct{} // closed by expire: the server forgot the session
	expireOnce  sync.Once
	dead        chan struct{} // closed by markDead: a request found the connection gone
	deadCause   *failure      // why; valid once dead is closed
	deadOnce    sync.Once

	done  chan struct{} // closed when the connection has ended on its own
	cause *failure      // why; valid once done is closed
	// closing is why Switchboard closed the link (close), set before it
	// does: the go-sdk reports its own close as the end of the server's
	// stream, so the watchers that set cause take this instead (ended).
	closing atomic.Pointer[failure]

	registered *mcp.ClientSession // the go-sdk session it is registered under; linksMu guards it
}

// listKind is a set of lists to refresh, and probeSoon.
type listKind uint8

const (
	listTools listKind = 1 << iota
	listResources
	listPrompts
	// probeSoon is no list: a call drew an answer that may mean the
	// server no longer knows the session (HTTP 400), so the lifecycle
	// probes it now rather than at the next health check.
	probeSoon

	listAll = listTools | listResources | listPrompts
)

func newLink(t sb.Transport) *link {
	return &link{transport: t, listChanged: make(chan listKind, 1), expired: make(chan struct{}),
		dead: make(chan struct{}), done: make(chan struct{}), cancel: func() {}}
}

// alive reports whether the link can still carry a call: it has not ended
// and the server has not forgotten its session.
func (l *link) alive() bool {
	if l.conn != nil {
		select {
		case <-l.conn.Done():
			return false
		default:
		}
	}
	select {
	case <-l.done:
		return false
	case <-l.expired:
		return false
	case <-l.dead:
		return false
	default:
		return true
	}
}

// expire reports that the server no longer knows this link's session (HTTP
// 404). However many callers report it, the link is dropped and replaced
// once.
func (l *link) expire() { l.expireOnce.Do(func() { close(l.expired) }) }

// markDead reports that the connection can carry nothing more, before the
// go-sdk notices (if it ever does): a request was refused a connection, or
// the server sent a frame over the size cap. From then on no call is sent
// on the link, and the lifecycle drops it with cause f; the first cause
// reported wins.
func (l *link) markDead(f *failure) {
	l.deadOnce.Do(func() {
		l.deadCause = f
		close(l.dead)
	})
}

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
//
// why is what the calls in flight on the link are told it closed for
// (ownClose).
func (l *link) close(how closeMode, why *failure) {
	l.closing.Store(why)
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
	l.forget()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}

// dropCause is why the calls in flight on a link that the lifecycle drops
// for cause are told it closed. A request's finding that the connection
// was gone (markDead) names it best, even when a health probe failing on
// the same connection came first; a probe's failure is Switchboard's own
// decision, and said so; the server's doing (it exited, its stream ended),
// which the lifecycle saw first, is said as cause says it.
func (l *link) dropCause(cause *failure) *failure {
	select {
	case <-l.dead:
		return l.deadCause
	default:
	}
	if cause.code == sb.CodeProbeTimeout || cause.code == sb.CodeProbeFailed {
		return fail(cause.phase, cause.code, retryFast, nil, "closed by Switchboard: %s", cause.msg)
	}
	return cause
}

// ended records why the connection ended, once the go-sdk's Wait has
// returned, and closes l.done: Switchboard's own close if it made one
// (ownClose), which the go-sdk reports as the server's doing, or else what
// the link's watcher makes of the end (found, called only then).
func (l *link) ended(found func() *failure) {
	if l.cause = l.ownClose(); l.cause == nil {
		if l.cause = l.wireCause(); l.cause == nil {
			l.cause = found()
		}
	}
	close(l.done)
}

// wireCause is the cause of a link whose own connection ended on a message
// over the size cap, or nil.
func (l *link) wireCause() *failure {
	if l.conn == nil {
		return nil
	}
	we, ok := wire.AsError(l.conn.Err())
	if !ok || we.Kind != wire.KindTooLarge {
		return nil
	}
	return fail(sb.PhaseRuntime, sb.CodeResultTooLarge, retryFast, ErrResultTooLarge,
		"the server sent a message over the %d-byte limit; the connection was reset", we.Limit)
}

// ownClose returns why Switchboard closed the link, or nil if it has not
// (as far as it knows yet): its close, or a Shutdown, which ends every
// request of a remote link at once, before the lifecycle gets to close it.
// The watchers take it for the link's cause over what the go-sdk says
// (ended).
func (l *link) ownClose() *failure {
	if f := l.closing.Load(); f != nil {
		return f
	}
	if l.session.runCtx.Err() != nil {
		return shutdownCause()
	}
	return nil
}

// shutdownCause is the cause of a link that Shutdown ended.
func shutdownCause() *failure {
	return fail(sb.PhaseRuntime, sb.CodeShuttingDown, retryNever, ErrShutdown, "closed by Switchboard: the session was shut down")
}

// closeMode says how a link is closed.
type closeMode int

const (
	closePolite  closeMode = iota // shutdown or restart: say goodbye
	closeDead                     // the connection failed: abort everything first
	closeExpired                  // the server forgot the session: let requests in flight finish
)

// notify passes a notification that is not about one call to
// Options.OnNotification.
func (s *Session) notify(p mcp.Params) {
	if s.opts.OnNotification != nil {
		s.opts.OnNotification(s.cfg.Name, p)
	}
}
