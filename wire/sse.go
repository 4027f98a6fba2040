package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// SSE is a connection to a server over the legacy HTTP+SSE transport of
// protocol 2024-11-05: one GET carries an event stream of everything the
// server sends, and every message the client sends is a POST to the
// endpoint that the stream's first event names. It replaces the go-sdk's
// SSEClientTransport, which breaks the connection on any failed POST (one
// rate-limited request failed every call in flight), holds an event whole
// whatever its size, and returns every result decoded.
//
// The caller's http.Client makes both the stream and the POSTs; what it
// adds to them (headers, the egress policy, the origin guard) is its own.
type SSE struct {
	hc       *http.Client
	endpoint string // the POST endpoint, resolved
	limit    int
	onMsg    func([]byte)
	onEnd    func()
	log      *slog.Logger

	// ctx is the connection's: the stream's GET and every POST end with
	// it, so Close aborts them all.
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser

	incoming chan jsonrpc.Message // to Read, in the stream's order

	ids     ids
	mu      sync.Mutex
	pending map[string]chan sseReply // Calls awaiting their answer
	cause   *Error                   // why the connection was ended, if not by the stream or Close
	closing bool                     // Close was called
	err     error                    // valid once done is closed
	done    chan struct{}            // closed when the read loop has stopped
}

var _ Conn = (*SSE)(nil)

// sseReply is the answer to a Call: its result as the server wrote it, or
// the error that fails it.
type sseReply struct {
	result json.RawMessage
	err    *Error
}

// afterCallTimeout bounds the POST of a notifications/cancelled sent for
// a Call whose ctx has ended: nothing else bounds it but the connection.
const afterCallTimeout = 10 * time.Second

// drainBody is how much of a POST's answer is read so that its
// connection can be used again; the answers of legacy SSE come on the
// stream, so a POST's body is an "Accepted" or an error page.
const drainBody = 4 << 10

// DialSSE opens the event stream at endpoint with hc (http.DefaultClient
// if nil) and waits for its endpoint event, which names where messages
// are POSTed; ctx bounds only that, the connection lives until Close or
// the stream's end. An endpoint of another origin than the stream's is
// refused (KindProtocol): the caller's headers are for that origin alone.
func DialSSE(ctx context.Context, endpoint string, hc *http.Client, opts *Options) (*SSE, error) {
	base, err := url.Parse(endpoint)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Err: err}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &SSE{
		hc:       hc,
		log:      opts.logger(),
		incoming: make(chan jsonrpc.Message),
		pending:  make(map[string]chan sseReply),
		done:     make(chan struct{}),
	}
	if opts != nil {
		c.limit, c.onMsg, c.onEnd = opts.Limit, opts.OnMessage, opts.OnEnd
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Until the endpoint event, ctx bounds the stream too.
	stop := context.AfterFunc(ctx, c.cancel)
	defer stop()

	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		c.cancel()
		return nil, &Error{Kind: KindProtocol, Err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := c.do(req)
	if err != nil {
		c.cancel()
		return nil, err
	}
	events, err := c.open(ctx, base, resp)
	if err != nil {
		resp.Body.Close()
		c.cancel()
		return nil, err
	}
	if !stop() {
		resp.Body.Close()
		return nil, &Error{Kind: KindTransport, Err: ctx.Err()}
	}
	c.body = resp.Body
	go c.readLoop(events)
	return c, nil
}

// open checks the stream's answer and reads its endpoint event.
func (c *SSE) open(ctx context.Context, base *url.URL, resp *http.Response) (*eventReader, error) {
	page := isWebPage(resp.Header.Get("Content-Type"))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Kind: KindStatus, Status: resp.StatusCode, Sent: true, Page: page}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return nil, &Error{Kind: KindProtocol, Status: resp.StatusCode, Sent: true, Page: page,
			Err: fmt.Errorf("the stream's answer is of type %q, not text/event-stream", resp.Header.Get("Content-Type"))}
	}
	events := newIdleEventReader(resp.Body, c.limit)
	ev, err := events.next()
	for err == nil && len(ev.data) == 0 && !ev.oversized {
		ev, err = events.next() // an event without data is not dispatched
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &Error{Kind: KindTransport, Sent: true, Err: ctx.Err()}
	case err != nil:
		return nil, &Error{Kind: KindClosed, Sent: true, Err: fmt.Errorf("before the endpoint event: %w", err)}
	case ev.oversized:
		return nil, &Error{Kind: KindTooLarge, Sent: true, Limit: c.limit}
	case ev.name != "endpoint":
		return nil, &Error{Kind: KindProtocol, Sent: true, Err: fmt.Errorf("the stream's first event is %q, not \"endpoint\"", ev.name)}
	}
	u, err := base.Parse(strings.TrimSpace(string(ev.data)))
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Sent: true, Err: fmt.Errorf("the endpoint event: %w", err)}
	}
	if u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host) {
		// Nothing is sent there: the caller's headers are for the
		// stream's origin.
		return nil, &Error{Kind: KindTransport, Sent: true,
			Err: &egress.RedirectError{From: base.Scheme + "://" + base.Host, To: u.String()}}
	}
	c.endpoint = u.String()
	return events, nil
}

// do sends req, telling a refused port (nothing sent) from any other
// failure of the client, and whether any of the request was written.
func (c *SSE) do(req *http.Request) (*http.Response, error) {
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := c.hc.Do(req)
	if err == nil {
		return resp, nil
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, &Error{Kind: KindRefused, Err: err}
	}
	return nil, &Error{Kind: KindTransport, Sent: wrote.Load(), Err: err}
}

// post sends one message to the endpoint. A status that refuses the
// message alone (refusesMessage) fails it and nothing else; any other
// error status ends the connection, as the go-sdk's client would.
func (c *SSE) post(ctx context.Context, body []byte, header http.Header) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return &Error{Kind: KindTransport, Err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.do(req)
	if err != nil {
		if we, ok := AsError(err); ok && we.Kind == KindTransport && c.ctx.Err() != nil {
			// The connection ended while the POST was under way (which
			// aborts it): its answer, which comes on the stream, is lost.
			<-c.done
			return &Error{Kind: KindClosed, Sent: we.Sent, Err: c.endCause()}
		}
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainBody))
	resp.Body.Close()
	page := isWebPage(resp.Header.Get("Content-Type"))
	switch s := resp.StatusCode; {
	case s >= 200 && s <= 299:
		return nil
	case refusesMessage(s):
		return &Error{Kind: KindStatus, Status: s, Sent: true, Page: page}
	case s == http.StatusNotFound:
		// The go-sdk's handler, and others', answer a session it no longer
		// has with 404.
		e := &Error{Kind: KindSessionMissing, Status: s, Sent: true}
		c.fail(e)
		return e
	default:
		e := &Error{Kind: KindStatus, Status: s, Sent: true, Page: page}
		c.fail(e)
		return e
	}
}

// refusesMessage reports whether an HTTP status answering a POST refuses
// that one message without saying anything of the session: for now (429,
// 5xx: an overloaded server or a proxy before it) or for what the message
// is (413, 422, 431). Not 400: some servers answer a session they do not
// know with it.
func refusesMessage(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusRequestEntityTooLarge,
		http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return status >= 500 && status <= 599
}

// fail ends the connection for e, unless it has ended already.
func (c *SSE) fail(e *Error) {
	c.mu.Lock()
	if c.cause == nil && !c.closing {
		c.cause = e
	}
	c.mu.Unlock()
	c.cancel()
}

// readLoop reads the stream until it ends, handing every message to
// OnMessage, the answers to Calls to their callers, and the rest to Read.
func (c *SSE) readLoop(events *eventReader) {
	defer events.release()
	var err error
	for err == nil {
		var ev event
		ev, err = events.next()
		switch {
		case err != nil:
		case ev.name != "" && ev.name != "message":
			c.log.Debug("ignored an event of the SSE stream", "event", ev.name)
		case ev.oversized:
			err = c.oversized(&ev)
		case len(ev.data) > 0: // an event without data is not dispatched
			err = c.message(ev.data)
		}
	}
	c.cancel() // every POST under way: their answers cannot come now
	c.body.Close()
	c.mu.Lock()
	switch {
	case c.closing:
		c.err = nil
	case c.cause != nil:
		c.err = c.cause
	default:
		var we *Error
		if !errors.As(err, &we) {
			we = &Error{Kind: KindClosed, Err: err}
		}
		c.err = we
	}
	pending := c.pending
	c.pending = nil
	close(c.done)
	if c.onEnd != nil {
		go c.onEnd()
	}
	c.mu.Unlock()
	// A Call waiting now was sent, and its answer will not come.
	why := c.endCause()
	for _, ch := range pending {
		ch <- sseReply{err: &Error{Kind: KindClosed, Sent: true, Err: why}}
	}
}

// endCause is what a request that the connection's end failed is told of
// it: the stream's read error, or what else ended it. Valid once done is
// closed.
func (c *SSE) endCause() error {
	switch we, _ := c.err.(*Error); {
	case we == nil:
		return errClosed
	case we.Kind == KindClosed:
		return we.Err
	default:
		return we
	}
}

// errClosed is why a Call waiting when Close was called failed.
var errClosed = errors.New("the connection was closed")

// message handles one message within the limit.
func (c *SSE) message(data []byte) error {
	if c.onMsg != nil {
		c.onMsg(data)
	}
	if rawjson.Contains(data, idPrefixQuoted) {
		if id, reply, ok := sseReplyOf(data); ok {
			c.answer(id, reply)
			return nil
		}
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '[' {
		m, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return &Error{Kind: KindProtocol, Err: err}
		}
		c.deliver(m)
		return nil
	}
	// A batch, which protocol 2024-11-05 allows: each of its messages is
	// routed as one of its own would be.
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return &Error{Kind: KindProtocol, Err: err}
	}
	if len(raws) == 0 {
		return &Error{Kind: KindProtocol, Err: errors.New("an empty batch")}
	}
	for _, raw := range raws {
		if rawjson.Contains(raw, idPrefixQuoted) {
			if id, reply, ok := sseReplyOf(raw); ok {
				c.answer(id, reply)
				continue
			}
		}
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return &Error{Kind: KindProtocol, Err: err}
		}
		if !c.deliver(m) {
			return nil
		}
	}
	return nil
}

// oversized handles a message over the limit, of which only its ends were
// kept: a server request or notification is dropped; an answer whose id
// its ends tell fails that request; one that cannot be told apart ends the
// connection, for it may be the answer a request waits for.
func (c *SSE) oversized(ev *event) error {
	kind, id := peek(ev.head)
	if id == nil && kind != kindRequest {
		id = idFromTail(ev.tail)
		if id != nil {
			kind = kindResponse
		}
	}
	tooLarge := &Error{Kind: KindTooLarge, Sent: true, Limit: c.limit}
	switch {
	case kind == kindRequest:
		c.log.Warn("dropped a server request or notification over the size limit", "limit", c.limit, "size", ev.size)
		return nil
	case kind == kindResponse && id != nil:
		c.log.Warn("discarded an answer over the size limit", "limit", c.limit, "size", ev.size)
		if s, ok := rawjson.String(id); ok && strings.HasPrefix(s, idPrefix) {
			c.answer(s, sseReply{err: tooLarge})
			return nil
		}
		var v any
		if json.Unmarshal(id, &v) != nil {
			return tooLarge
		}
		rid, err := jsonrpc.MakeID(v)
		if err != nil {
			return tooLarge
		}
		// The go-sdk's request fails with the error itself: its jsonrpc2
		// layer returns a response's Error to the caller as it is.
		c.deliver(&jsonrpc.Response{ID: rid, Error: tooLarge})
		return nil
	}
	c.log.Warn("a message over the size limit could not be told apart; ending the connection", "limit", c.limit, "size", ev.size)
	return tooLarge
}

// answer gives reply to the Call with the id, if it still waits.
func (c *SSE) answer(id string, reply sseReply) {
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- reply // buffered
	}
}

// deliver hands one message to Read, unless the connection is ending.
func (c *SSE) deliver(m jsonrpc.Message) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// sseReplyOf reads a response with a Call's id (parseReply) as what fails
// or answers the Call.
func sseReplyOf(data []byte) (id string, r sseReply, ok bool) {
	id, rep, ok := parseReply(data)
	if !ok {
		return "", sseReply{}, false
	}
	if rep.err != nil {
		return id, sseReply{err: &Error{Kind: KindRPC, Sent: true, RPC: rep.err}}, true
	}
	return id, sseReply{result: rep.result}, true
}

// Read implements mcp.Connection: the next message of the stream that is
// not the answer to a Call.
func (c *SSE) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		if c.err != nil {
			return nil, c.err
		}
		return nil, io.EOF
	}
}

// Write implements mcp.Connection: msg is POSTed to the endpoint. A
// refusal of that one message is reported so that the go-sdk fails the
// request alone (rejected) and keeps the connection.
func (c *SSE) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.done:
		return &Error{Kind: KindClosed, Err: c.endCause()}
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	err = c.post(ctx, data, nil)
	if we, ok := AsError(err); ok && we.Kind == KindStatus && refusesMessage(we.Status) {
		return rejected{we}
	}
	return err
}

// Close implements mcp.Connection: it ends the stream and every POST, and
// fails every waiting Call with KindClosed. It returns once the read loop
// has stopped, which the end of the GET's context makes prompt.
func (c *SSE) Close() error {
	c.mu.Lock()
	if c.cause == nil {
		c.closing = true
	}
	c.mu.Unlock()
	c.cancel()
	<-c.done
	return nil
}

// SessionID implements mcp.Connection; legacy SSE has no session header.
func (c *SSE) SessionID() string { return "" }

// Done is closed when the connection has ended.
func (c *SSE) Done() <-chan struct{} { return c.done }

// Err tells why the connection ended: nil after Close, else an *Error
// (KindClosed with the stream's read error, or what ended it).
func (c *SSE) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Call sends req with an id of its own and waits for its answer on the
// stream, which may come before the POST's own 202. If ctx ends first, the
// server is told with notifications/cancelled (when the request was
// sent) and ctx's error returned.
func (c *SSE) Call(ctx context.Context, req *Request) (json.RawMessage, error) {
	id := c.ids.take()
	ch := make(chan sseReply, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return nil, &Error{Kind: KindClosed, Err: c.endCause()}
	}
	c.pending[id] = ch
	c.mu.Unlock()

	body := appendRequest(make([]byte, 0, 64+len(req.Method)+len(req.Params)), id, req)

	if err := c.post(ctx, body, req.Header); err != nil {
		c.forget(id)
		if ctx.Err() != nil {
			if we, ok := AsError(err); ok && we.Sent {
				c.cancelled(ctx, id)
			}
			return nil, ctx.Err()
		}
		return nil, err
	}
	select {
	case r := <-ch:
		return c.reply(r)
	case <-ctx.Done():
		c.forget(id)
		select {
		case r := <-ch: // the answer came just as ctx ended
			return c.reply(r)
		default:
		}
		c.cancelled(ctx, id)
		return nil, ctx.Err()
	}
}

func (c *SSE) reply(r sseReply) (json.RawMessage, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.result, nil
}

// forget stops waiting for the answer to id.
func (c *SSE) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// cancelled tells the server that the Call with id was given up, as the
// go-sdk does for its own requests; ctx, the Call's, has ended.
func (c *SSE) cancelled(ctx context.Context, id string) {
	body := cancelled(id, context.Cause(ctx).Error())
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterCallTimeout)
	defer cancel()
	if err := c.post(pctx, body, nil); err != nil {
		c.log.Debug("could not tell the server of a cancelled call", "id", id, "err", err)
	}
}
