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
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// This file is the connection under the go-sdk client on Streamable HTTP
// (the 2025-03-26 transport and its 2026-07-28 stateless use), in place of
// the go-sdk's StreamableClientTransport. It speaks what that transport
// speaks on the wire (one POST per message, the session and protocol
// headers, answers as JSON or as an event stream, resumption with
// Last-Event-ID, the standalone GET stream, DELETE on close), with three
// differences that are why it exists:
//   - it reads every answer with a bound (Options.Limit) and fails only the
//     request whose answer was too large;
//   - a request's failure is an *Error the wire itself knows (kind, status,
//     whether it was sent), and a go-sdk request whose POST fails gets that
//     error as its JSON-RPC answer instead of ending the connection (the
//     go-sdk's jsonrpc2 breaks the connection on any Write error that is not
//     its "rejected by transport" code);
//   - Call sends a request around the go-sdk and returns its result as the
//     bytes the server wrote.

// Header names of the Streamable HTTP transport.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"
)

// statelessVersion is the first protocol version of the stateless
// protocol (SEP-2575): requests carry their own _meta, the Mcp-Method and
// Mcp-Name headers are sent, and there is no standalone GET stream.
const statelessVersion = "2026-07-28"

// metaProtocolVersion is the _meta key a 2026-07-28 request names its
// protocol version under.
var metaProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

const (
	// maxResumes is how many times in a row a stream is resumed without
	// an event arriving before its request fails (the go-sdk's MaxRetries
	// default).
	maxResumes = 5
	// resumeDelay is the first wait before resuming a stream whose server
	// named no retry; each further attempt waits 1.5 times longer, up to
	// resumeMaxDelay.
	resumeDelay    = 500 * time.Millisecond
	resumeMaxDelay = 30 * time.Second
	// closeTimeout bounds the DELETE that ends the session on Close, and
	// the notifications/cancelled sent for a cancelled Call: a server that
	// accepts the connection and never answers must not hold either.
	closeTimeout = 5 * time.Second
	// errorBodyLimit bounds how much of an error status's body is read to
	// find a JSON-RPC error in it.
	errorBodyLimit = 64 << 10
)

// Streamable is a Conn to a Streamable HTTP endpoint. Make it with
// NewStreamable; Close it when done.
type Streamable struct {
	endpoint string
	hc       *http.Client
	limit    int
	onMsg    func([]byte)
	onEnd    func()
	log      *slog.Logger

	ctx    context.Context // the connection's life: ends at Close or failure
	cancel context.CancelFunc

	incoming chan jsonrpc.Message // to Read, in the order read
	done     chan struct{}
	endOnce  sync.Once
	err      error // why it ended; set before done closes
	closed   atomic.Bool
	wg       sync.WaitGroup // stream readers

	ids ids // Call's ids

	mu        sync.Mutex
	sessionID string
	version   string                // negotiated protocol version
	handshake map[jsonrpc.ID]string // go-sdk requests whose answer tells the version: method, or the _meta version asked for
	getOnce   sync.Once
}

var _ Conn = (*Streamable)(nil)

// NewStreamable returns a connection to the Streamable HTTP endpoint,
// whose requests hc sends (nil: http.DefaultClient). Nothing is sent until
// the go-sdk writes its first message or Call is called. opts may be nil.
func NewStreamable(endpoint string, hc *http.Client, opts *Options) *Streamable {
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Streamable{
		endpoint:  endpoint,
		hc:        hc,
		log:       opts.logger(),
		ctx:       ctx,
		cancel:    cancel,
		incoming:  make(chan jsonrpc.Message, 16),
		done:      make(chan struct{}),
		handshake: map[jsonrpc.ID]string{},
	}
	if opts != nil {
		c.limit, c.onMsg, c.onEnd = opts.Limit, opts.OnMessage, opts.OnEnd
	}
	return c
}

// SessionID returns the session id the server gave, if any.
func (c *Streamable) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// ProtocolVersion returns the protocol version negotiated so far, if any.
func (c *Streamable) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *Streamable) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended: nil while it is up and after
// Close, an *Error when it ended on its own.
func (c *Streamable) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// ended reports whether the connection has ended (or was closed).
func (c *Streamable) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// exchange is the context of one request: it ends when the caller's ctx
// or the connection ends, or when the exchange is released, whichever is
// first. It is not ctx itself because a request's stream is read to its
// end after the answer (drain), when the caller has moved on: net/http
// closes a connection whose request's context ends before its body has
// been read to the end, and the next request then dials a new one (24
// connections for 300 sequential calls on loopback, nearly one per call
// under load).
type exchange struct {
	ctx        context.Context
	cancel     context.CancelFunc
	stopCaller func() bool
	stopConn   func() bool
	handedOff  bool // drain releases it
}

// withConn returns the exchange of one request made for ctx.
func (c *Streamable) withConn(ctx context.Context) *exchange {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &exchange{ctx: rctx, cancel: cancel,
		stopCaller: context.AfterFunc(ctx, cancel), stopConn: context.AfterFunc(c.ctx, cancel)}
}

// release ends the exchange, unless drain has taken it over.
func (x *exchange) release() {
	if !x.handedOff {
		x.end()
	}
}

func (x *exchange) end() {
	x.stopCaller()
	x.stopConn()
	x.cancel()
}

// end ends the connection because of err (nil: Close), aborting every
// request in flight.
func (c *Streamable) end(err error) {
	c.expire(err)
	c.cancel()
}

// expire ends the connection because of err: no request is sent on it
// from now on, but those in flight go on until Close.
func (c *Streamable) expire(err error) {
	c.endOnce.Do(func() {
		c.err = err
		close(c.done)
		if c.onEnd != nil {
			go c.onEnd()
		}
	})
}

// Close ends the connection: requests in flight fail (KindClosed), the
// streams end, and the session ends with a DELETE, bounded by
// closeTimeout (none when the server has no session, or the connection
// ended on its own: the server forgot the session or cannot be reached).
// Requests in flight are aborted first: a server may hold the DELETE until
// their handlers return.
func (c *Streamable) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	sid, endedBefore := c.SessionID(), c.ended()
	if we, ok := AsError(c.Err()); endedBefore && ok && we.Kind == KindSessionMissing {
		// The server forgot the session: the requests still in flight get
		// their own 404 at once, which tells their callers that they did
		// not run; aborting them would leave that unknown. They get
		// closeTimeout for it.
		time.AfterFunc(closeTimeout, c.cancel)
		return nil
	}
	c.end(nil)
	var closeErr error
	if sid != "" && !endedBefore {
		ctx, stop := context.WithTimeout(context.Background(), closeTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
		if err == nil {
			c.setHeaders(req.Header, "", "")
			var resp *http.Response
			if resp, err = c.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		stop()
		closeErr = err
	}
	c.wg.Wait()
	return closeErr
}

// Read returns the next message for the go-sdk: the answers to its
// requests, and the server's requests and notifications, from every
// stream, each stream's in its order.
func (c *Streamable) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.done:
		if c.err != nil {
			return nil, c.err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands msg to Read; false if the connection ended first.
func (c *Streamable) deliver(msg jsonrpc.Message) bool {
	select {
	case c.incoming <- msg:
		return true
	case <-c.done:
		return false
	}
}

// outgoing is one message to POST.
type outgoing struct {
	body    []byte
	method  string // "" for a response
	call    bool   // a request with an id, answered on its POST
	version string // the version the request's own _meta names
	name    string // Mcp-Name
	header  http.Header
}

// Write sends msg, one POST. A request's answer (and what else its stream
// carries) reaches Read; if the POST fails, its JSON-RPC answer is that
// failure, an *Error, and the connection stays up unless the server has
// dropped the session.
func (c *Streamable) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := c.Err(); err != nil {
		return err
	}
	if c.closed.Load() {
		return &Error{Kind: KindClosed}
	}
	body, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	out := outgoing{body: body}
	var id jsonrpc.ID
	if r, ok := msg.(*jsonrpc.Request); ok {
		out.method, out.call, id = r.Method, r.IsCall(), r.ID
		out.version, out.name = requestFields(r.Method, r.Params)
		if out.call {
			if r.Method == "initialize" {
				c.noteHandshake(id, r.Method)
			} else if out.version != "" {
				c.noteHandshake(id, out.version)
			}
		}
	}
	x := c.withConn(ctx)
	rctx, release := x.ctx, x.release
	resp, werr := c.post(rctx, &out)
	if werr == nil && out.call {
		werr = c.checkAnswer(resp)
	}
	if werr != nil || !out.call {
		release()
	}
	if werr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if werr.Kind == KindSessionMissing {
			return werr // the connection has ended with it
		}
		if !out.call {
			return rejected{werr}
		}
		c.forgetHandshake(id)
		c.deliver(&jsonrpc.Response{ID: id, Error: werr})
		return nil
	}
	if !out.call {
		if out.method == "notifications/initialized" {
			return c.startStandalone(ctx)
		}
		return nil
	}
	// The answer is read on its own goroutine, as the go-sdk's transport
	// does: Write returns once the server took the request. ctx is the
	// request's: the go-sdk ends it when the caller gives up, after which
	// nothing more of the stream matters; rctx ends with it, or with the
	// connection.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer release()
		ans, werr := c.readAnswer(rctx, resp, &answerTo{id: id, x: x}, "")
		if werr != nil {
			c.forgetHandshake(id)
			if ctx.Err() == nil {
				c.deliver(&jsonrpc.Response{ID: id, Error: werr})
			}
			return
		}
		m, err := jsonrpc.DecodeMessage(ans)
		if err != nil {
			c.deliver(&jsonrpc.Response{ID: id, Error: &Error{Kind: KindProtocol, Sent: true, Err: err}})
			return
		}
		c.noteAnswer(m)
		c.deliver(m)
	}()
	return nil
}

// requestFields returns what a request's params tell the headers: the
// protocol version its _meta names and the name Mcp-Name carries, read as
// the go-sdk reads them. Params are decoded only when they can say either.
func requestFields(method string, params json.RawMessage) (version, name string) {
	hasName := method == "tools/call" || method == "prompts/get" || method == "resources/read"
	if len(params) == 0 || (!hasName && !rawjson.Contains(params, metaProtocolVersion)) {
		return "", ""
	}
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", ""
	}
	switch method {
	case "tools/call", "prompts/get":
		name = p.Name
	case "resources/read":
		name = p.URI
	}
	return p.Meta.Version, name
}

func (c *Streamable) noteHandshake(id jsonrpc.ID, what string) {
	c.mu.Lock()
	if c.version == "" {
		c.handshake[id] = what
	}
	c.mu.Unlock()
}

func (c *Streamable) forgetHandshake(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.handshake, id)
	c.mu.Unlock()
}

// noteAnswer takes the negotiated protocol version from the answer to the
// handshake passing through to the go-sdk: initialize's result names it;
// a server/discover (or any 2026-07-28 request) that succeeds agrees to
// the version its own _meta asked for, if the server lists it.
func (c *Streamable) noteAnswer(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	what, ok := c.handshake[r.ID]
	if !ok {
		return
	}
	delete(c.handshake, r.ID)
	if r.Error != nil || c.version != "" {
		return
	}
	var res struct {
		ProtocolVersion   string   `json:"protocolVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(r.Result, &res) != nil {
		return
	}
	switch {
	case what == "initialize":
		c.version = res.ProtocolVersion
	case res.SupportedVersions == nil:
		c.version = what // not a discover: the server served the version asked for
	default:
		for _, v := range res.SupportedVersions {
			if v == what {
				c.version = what
			}
		}
	}
	if c.version != "" {
		clear(c.handshake)
	}
}

// Call sends req with an id of the connection's own and returns the
// result object as the server wrote it. See Conn.Call.
func (c *Streamable) Call(ctx context.Context, req *Request) (json.RawMessage, error) {
	if err := c.Err(); err != nil {
		return nil, &Error{Kind: KindClosed, Err: err}
	}
	if c.closed.Load() {
		return nil, &Error{Kind: KindClosed}
	}
	idText := c.ids.take()
	body := appendRequest(make([]byte, 0, 64+len(req.Method)+len(idText)+len(req.Params)), idText, req)
	out := outgoing{body: body, method: req.Method, call: true, name: req.Name, header: req.Header}
	if rawjson.Contains(req.Params, metaProtocolVersion) {
		out.version, _ = requestFields("", req.Params)
	}
	var sent atomic.Bool
	x := c.withConn(ctx)
	defer x.release()
	rctx := x.ctx
	to := &answerTo{call: idText, x: x}
	resp, werr := c.postSent(rctx, &out, &sent)
	if werr == nil {
		werr = c.checkAnswer(resp)
	}
	if werr == nil {
		_, werr = c.readAnswer(rctx, resp, to, req.Tag)
	}
	if ctx.Err() != nil {
		if sent.Load() {
			c.cancelled(ctx, idText)
		}
		return nil, ctx.Err()
	}
	if werr != nil {
		return nil, werr
	}
	if to.reply.empty {
		return nil, &Error{Kind: KindProtocol, Sent: true, Err: errors.New("an answer with neither result nor error")}
	}
	return to.reply.outcome()
}

// cancelled tells the server that the Call with id idText was given up
// (bounded by closeTimeout; best effort).
func (c *Streamable) cancelled(ctx context.Context, idText string) {
	body := make([]byte, 0, 128)
	body = append(body, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`...)
	body = append(body, idText...)
	body = append(body, `","reason":`...)
	body = strconv.AppendQuote(body, context.Cause(ctx).Error())
	body = append(body, `}}`...)
	nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer stop()
	stopOnEnd := context.AfterFunc(c.ctx, stop)
	defer stopOnEnd()
	out := outgoing{body: body, method: "notifications/cancelled"}
	if resp, werr := c.post(nctx, &out); werr == nil {
		resp.Body.Close()
	}
}

// post sends out and returns the server's answer to it once its status
// and headers are in: a 2xx, whose body the caller reads and closes, or
// the request's failure.
func (c *Streamable) post(ctx context.Context, out *outgoing) (*http.Response, *Error) {
	var sent atomic.Bool
	return c.postSent(ctx, out, &sent)
}

// postSent is post, setting sent as soon as any of the request is written.
func (c *Streamable) postSent(ctx context.Context, out *outgoing, sent *atomic.Bool) (*http.Response, *Error) {
	trace := &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.endpoint, bytes.NewReader(out.body))
	if err != nil {
		return nil, &Error{Kind: KindTransport, Err: err}
	}
	for k, v := range out.header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	sid := c.setHeaders(req.Header, out.version, out.method)
	if out.name != "" && req.Header.Get(methodHeader) != "" {
		req.Header.Set(nameHeader, out.name)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.clientError(err, sent.Load())
	}
	if werr := c.checkStatus(resp, sid); werr != nil {
		return nil, werr
	}
	if s := resp.Header.Get(sessionIDHeader); s != "" {
		c.mu.Lock()
		if c.sessionID == "" {
			c.sessionID = s
		}
		mismatch := c.sessionID != s
		c.mu.Unlock()
		if mismatch {
			resp.Body.Close()
			return nil, &Error{Kind: KindProtocol, Status: resp.StatusCode, Sent: true,
				Err: fmt.Errorf("the server answered with session id %q, not the session's %q", s, sid)}
		}
	}
	if !out.call {
		// A notification's or response's POST is answered 202 with no
		// body; some servers send 200 with an empty one.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
	}
	return resp, nil
}

// setHeaders sets the session and protocol headers: the protocol version
// a request's own _meta names (version), else the negotiated one, and for
// the 2026-07-28 protocol, Mcp-Method. It returns the session id sent.
func (c *Streamable) setHeaders(h http.Header, version, method string) string {
	c.mu.Lock()
	sid, negotiated := c.sessionID, c.version
	c.mu.Unlock()
	if version == "" {
		version = negotiated
	}
	if version != "" {
		h.Set(protocolVersionHeader, version)
	}
	if sid != "" {
		h.Set(sessionIDHeader, sid)
	}
	if method != "" && version >= statelessVersion {
		h.Set(methodHeader, method)
	}
	return sid
}

// clientError is the failure of the HTTP client to get an answer.
func (c *Streamable) clientError(err error, sent bool) *Error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &Error{Kind: KindRefused, Err: err}
	}
	if c.ended() {
		// The connection's end aborted the request: say why it ended.
		if cause := c.Err(); cause != nil {
			err = cause
		}
		return &Error{Kind: KindClosed, Sent: sent, Err: err}
	}
	return &Error{Kind: KindTransport, Sent: sent, Err: err}
}

// checkStatus returns the failure an error status is, closing the body;
// nil for a 2xx. A 404 to a request that named a session says the server
// has forgotten it, which ends the connection.
func (c *Streamable) checkStatus(resp *http.Response, sid string) *Error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	defer resp.Body.Close()
	page := isWebPage(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusNotFound && sid != "" && !page {
		// The requests in flight are not aborted: each gets its own 404,
		// which tells its caller that it did not run.
		werr := &Error{Kind: KindSessionMissing, Status: resp.StatusCode, Sent: true}
		c.expire(werr)
		return werr
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	if isJSON(resp.Header.Get("Content-Type")) {
		var m struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if json.Unmarshal(body, &m) == nil && m.Error != nil {
			return &Error{Kind: KindRPC, Status: resp.StatusCode, Sent: true, RPC: m.Error}
		}
	}
	return &Error{Kind: KindStatus, Status: resp.StatusCode, Sent: true, Page: page}
}

// checkAnswer checks that a 2xx answer to a request can carry its answer:
// JSON or an event stream. It closes the body of one that cannot.
func (c *Streamable) checkAnswer(resp *http.Response) *Error {
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json", "text/event-stream":
		return nil
	}
	resp.Body.Close()
	return &Error{Kind: KindProtocol, Status: resp.StatusCode, Sent: true, Page: isWebPage(resp.Header.Get("Content-Type")),
		Err: fmt.Errorf("the server answered a request with Content-Type %q", resp.Header.Get("Content-Type"))}
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	return mt
}

func isJSON(ct string) bool { return mediaType(ct) == "application/json" }

// readAnswer reads the answer to the request id from resp (checked by
// checkAnswer) and closes it. On an event stream, every other message is
// passed on (OnMessage, then Read) in order, and a stream that breaks
// before the answer is resumed.
func (c *Streamable) readAnswer(ctx context.Context, resp *http.Response, to *answerTo, tag string) ([]byte, *Error) {
	status := resp.StatusCode
	if isJSON(resp.Header.Get("Content-Type")) {
		defer resp.Body.Close()
		msg, werr := c.readJSON(resp)
		if werr != nil {
			return nil, werr
		}
		if c.onMsg != nil {
			c.onMsg(msg)
		}
		if to.is(msg) {
			return msg, nil
		}
		// One message that is not the answer: pass it on; the request
		// has none.
		c.passOn(msg, tag)
		return nil, &Error{Kind: KindProtocol, Status: status, Sent: true, Err: errors.New("the server's JSON answer is not the request's response")}
	}

	lastID, retry := "", time.Duration(0)
	resumes := 0
	for {
		ans, werr, progressed := c.readStream(resp, to, tag, &lastID, &retry)
		if ans != nil || werr != nil {
			return ans, werr
		}
		if ctx.Err() != nil || c.ended() {
			return nil, &Error{Kind: KindClosed, Status: status, Sent: true, Err: c.Err()}
		}
		if lastID == "" {
			return nil, &Error{Kind: KindClosed, Status: status, Sent: true,
				Err: errors.New("the server ended the request's stream before its answer, with no event id to resume from")}
		}
		if progressed {
			resumes = 0
		}
		var err *Error
		resp, err = c.resume(ctx, lastID, retry, &resumes)
		if err != nil {
			return nil, err
		}
	}
}

// readJSON reads one JSON answer, bounded by the limit.
func (c *Streamable) readJSON(resp *http.Response) ([]byte, *Error) {
	if c.limit > 0 && resp.ContentLength > int64(c.limit) {
		return nil, &Error{Kind: KindTooLarge, Status: resp.StatusCode, Sent: true, Limit: c.limit}
	}
	// The buffer doubles as it fills, but never past the limit (and one
	// byte, to tell a body over it): a refused answer costs about twice
	// the limit, whatever its size.
	most := -1
	if c.limit > 0 {
		most = c.limit + 1
	}
	size := 4 << 10
	if resp.ContentLength > 0 {
		size = int(resp.ContentLength) + 1
	}
	if most > 0 {
		size = min(size, most)
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if len(buf) == most {
				return nil, &Error{Kind: KindTooLarge, Status: resp.StatusCode, Sent: true, Limit: c.limit}
			}
			grown := 2 * cap(buf)
			if most > 0 {
				grown = min(grown, most)
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, c.clientError(err, true)
		}
	}
}

// readStream reads events from resp until the answer to (returned), a
// failure, or the stream's end (all nil: resume from *lastID). It closes
// resp. progressed reports whether any event arrived. A nil to is the
// standalone stream, which has no answer: an oversized message on it is
// dropped.
func (c *Streamable) readStream(resp *http.Response, to *answerTo, tag string, lastID *string, retry *time.Duration) (ans []byte, werr *Error, progressed bool) {
	standalone := to == nil
	var er *eventReader
	if standalone {
		er = newIdleEventReader(resp.Body, c.limit)
	} else {
		er = newEventReader(resp.Body, c.limit)
	}
	defer func() {
		er.release()
		if ans != nil {
			c.drain(resp.Body, to.x)
		} else {
			resp.Body.Close()
		}
	}()
	for {
		ev, err := er.next()
		if err != nil {
			return nil, nil, progressed
		}
		progressed = true
		if ev.seenID {
			*lastID = ev.id
		}
		if ev.retry != "" {
			if n, err := strconv.ParseInt(ev.retry, 10, 64); err == nil && n >= 0 {
				*retry = time.Duration(n) * time.Millisecond
			}
		}
		if ev.name != "" && ev.name != "message" {
			continue
		}
		if ev.oversized {
			if standalone {
				c.log.Warn("dropped a message over the size limit from the server's stream", "limit", c.limit)
				continue
			}
			// Which message it was cannot be told without holding it; on
			// a request's stream, it fails that request alone.
			return nil, &Error{Kind: KindTooLarge, Status: resp.StatusCode, Sent: true, Limit: c.limit}, true
		}
		if len(ev.data) == 0 {
			continue // a priming event: only an id to resume from
		}
		if c.onMsg != nil {
			c.onMsg(ev.data)
		}
		if !standalone && to.is(ev.data) {
			return ev.data, nil, true
		}
		if !c.passOn(ev.data, tag) {
			return nil, &Error{Kind: KindClosed, Status: resp.StatusCode, Sent: true, Err: c.Err()}, true
		}
	}
}

// drainLimit bounds what is read of a request's stream after its answer.
const drainLimit = 64 << 10

// drain reads what a server sends after a request's answer (the stream's
// end, as a rule) on a goroutine of its own, so that the HTTP connection
// is reused and the caller is not held; a body not done within
// drainLimit, or by the connection's end, is closed instead. It takes
// over the request's exchange: the caller's end no longer ends it, and it
// is released once the body is closed, so that net/http keeps the
// connection.
func (c *Streamable) drain(body io.ReadCloser, x *exchange) {
	x.stopCaller()
	x.handedOff = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		stop := context.AfterFunc(c.ctx, func() { body.Close() })
		defer stop()
		io.CopyN(io.Discard, body, drainLimit)
		body.Close()
		x.end()
	}()
}

// passOn decodes msg and hands it to Read; false if the connection has
// ended. A message that is not JSON-RPC is dropped with a warning.
func (c *Streamable) passOn(msg []byte, tag string) bool {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		c.log.Warn("dropped a message from the server that is not JSON-RPC", "error", err)
		return c.Err() == nil
	}
	if r, ok := m.(*jsonrpc.Request); ok && tag != "" && r.ID.IsValid() {
		r.Params = tagParams(r.Params, tag)
	}
	c.noteAnswer(m)
	return c.deliver(m)
}

// answerTo is the request whose answer a stream is read for: a go-sdk
// request (id), or a Call's (call, its id in Call's namespace), whose
// answer is read once, from the bytes, into reply.
type answerTo struct {
	id    jsonrpc.ID
	call  string
	reply reply
	x     *exchange // the request's, which drain takes over
}

// is reports whether msg is the answer; a Call's answer is parsed as it
// is recognised (parseReply walks it once, without decoding its result),
// not once to recognise it and again to read it.
func (a *answerTo) is(msg []byte) bool {
	if a.call == "" {
		return isAnswer(msg, a.id)
	}
	if !mayAnswerCall(msg) {
		return false
	}
	id, r, ok := parseReply(msg)
	if !ok || id != a.call {
		return false
	}
	a.reply = r
	return true
}

// isAnswer reports whether msg is the response to the request id.
func isAnswer(msg []byte, id jsonrpc.ID) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if !rawjson.Contains(msg, []byte(`"id"`)) || json.Unmarshal(msg, &m) != nil || m.Method != nil || m.ID == nil {
		return false
	}
	var raw any
	if json.Unmarshal(m.ID, &raw) != nil {
		return false
	}
	got, err := jsonrpc.MakeID(raw)
	return err == nil && got == id
}

// resume reopens a broken stream with a GET naming the last event id, after
// the server's retry delay (or a backoff), up to maxResumes attempts in a
// row without an event.
func (c *Streamable) resume(ctx context.Context, lastID string, retry time.Duration, resumes *int) (*http.Response, *Error) {
	for {
		*resumes++
		if *resumes > maxResumes {
			return nil, &Error{Kind: KindClosed, Sent: true,
				Err: fmt.Errorf("the request's stream broke %d times without an event", maxResumes)}
		}
		delay := retry
		if delay <= 0 {
			delay = resumeDelay
			for range *resumes - 1 {
				delay = min(delay*3/2, resumeMaxDelay)
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Kind: KindClosed, Sent: true, Err: ctx.Err()}
		case <-c.done:
			t.Stop()
			return nil, &Error{Kind: KindClosed, Sent: true, Err: c.Err()}
		case <-t.C:
		}
		resp, werr := c.get(ctx, lastID)
		if werr != nil {
			if werr.Kind == KindSessionMissing || werr.Kind == KindStatus {
				return nil, werr
			}
			continue
		}
		if mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
			resp.Body.Close()
			return nil, &Error{Kind: KindProtocol, Status: resp.StatusCode, Sent: true,
				Err: fmt.Errorf("the server resumed a stream with Content-Type %q", resp.Header.Get("Content-Type"))}
		}
		return resp, nil
	}
}

// get opens a GET stream (lastID "": the standalone one).
func (c *Streamable) get(ctx context.Context, lastID string) (*http.Response, *Error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, &Error{Kind: KindTransport, Err: err}
	}
	sid := c.setHeaders(req.Header, "", "")
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.clientError(err, true)
	}
	if werr := c.checkStatus(resp, sid); werr != nil {
		return nil, werr
	}
	return resp, nil
}

// startStandalone opens the standalone GET stream once the handshake is
// done, for a protocol that has one (not 2026-07-28's stateless one): the
// server's requests and notifications outside any request reach Read by
// it. A server without one answers 405.
//
// It waits for the GET's answer (until ctx, the handshake's, ends): a GET
// that the HTTP client refuses (a redirect to another origin, an address
// the caller's policy blocks) fails the handshake, as it would the
// go-sdk's; a status (405, or a proxy's answer) does not.
func (c *Streamable) startStandalone(ctx context.Context) error {
	v := c.ProtocolVersion()
	if v == "" || v >= statelessVersion {
		return nil
	}
	var first chan *Error
	c.getOnce.Do(func() {
		first = make(chan *Error, 1)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.standalone(first)
		}()
	})
	if first == nil {
		return nil
	}
	select {
	case werr := <-first:
		if werr != nil && werr.Kind == KindTransport {
			return werr
		}
	case <-ctx.Done():
	}
	return nil
}

// standalone reads the standalone stream until the connection ends; first
// hears how its first GET was answered.
func (c *Streamable) standalone(first chan<- *Error) {
	resp, werr := c.get(c.ctx, "")
	first <- werr
	if werr != nil {
		if werr.Status != http.StatusMethodNotAllowed && c.Err() == nil && !c.closed.Load() {
			c.log.Warn("the server's standalone stream could not be opened", "error", werr)
		}
		return
	}
	if mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
		resp.Body.Close()
		c.log.Warn("the server answered the standalone stream's GET with another content type", "content_type", resp.Header.Get("Content-Type"))
		return
	}
	lastID, retry, resumes := "", time.Duration(0), 0
	for {
		_, _, progressed := c.readStream(resp, nil, "", &lastID, &retry)
		if c.ctx.Err() != nil {
			return
		}
		if progressed {
			resumes = 0
		}
		resp, werr = c.resume(c.ctx, lastID, retry, &resumes)
		if werr != nil {
			if c.ctx.Err() == nil && werr.Kind != KindSessionMissing {
				c.log.Warn("the server's standalone stream ended", "error", werr)
			}
			return
		}
	}
}
