package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-mcp/switchboard/egress"
)

// streamHeaderTimeout bounds how long a GET for an event stream may wait for
// response headers. The go-sdk opens the standalone Streamable HTTP stream
// inside Connect with a context that never ends (go-sdk#633), so a server
// that never answers that GET would otherwise stall Connect forever.
const streamHeaderTimeout = 15 * time.Second

// afterCallTimeout bounds a POST sent on behalf of a call that has ended
// (its notifications/cancelled), which no caller waits for.
const afterCallTimeout = 10 * time.Second

// roundTripper puts the config's headers on every request of the
// configured origin (and refuses requests for any other: egress/origin.go), records the
// HTTP status of failed responses in the request context's statusRecorder,
// and ties every request to the link's context, so that closing a link
// aborts all of its requests at once: the go-sdk detaches its Streamable
// HTTP stream from every context we could cancel, and its DELETE on close
// would otherwise wait on a server that no longer answers.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	guard   *egress.OriginGuard // refuses requests for other origins, which must not get the headers
	via     *egress.Instance    // says who sends every request (egress/loop.go)
	reach   *egress.Reach       // learns whom the server reaches from its answers (egress/loop.go)
	linkCtx context.Context
	onSSE   func(msg []byte) // sees every server-sent event's data (the progress tap)
	// onRefused hears of every request that found nothing listening: the
	// server is gone, whatever the go-sdk makes of the failed request.
	onRefused func(err error)
	// onBlocked hears of every request refused for its address
	// (egress/policy.go), which the go-sdk reports as a mere failed request.
	onBlocked func(err *egress.BlockedAddressError)
	// limit bounds one message of every answer (bodylimit.go); log hears
	// of the ones discarded; onUnknown is bodyLimit's.
	limit     int
	log       *slog.Logger
	onUnknown func()
	// onStream, if set, hears of every event-stream GET about to be sent:
	// the context the go-sdk sends it with, and the request's own, which
	// ends with that, the link, or the closing of the response's body
	// (remote.go).
	onStream func(sdk, own context.Context)
	// captures, on a legacy SSE link, holds the results to take from the
	// link's event stream, where the answers to its POSTs come.
	captures *streamCaptures
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && t.linkCtx.Err() != nil {
		return streamRefused(req), nil
	}
	if t.guard != nil {
		// A redirect is refused before it gets here (checkRedirect); what
		// remains is the legacy SSE endpoint event, which names any URL.
		if err := t.guard.Check(req, 0); err != nil {
			return nil, err
		}
	}
	parent := req.Context()
	sent, _ := parent.Value(sendRecordKey{}).(*sendRecord)
	afterCall := sent != nil && sent.ctx.Err() != nil
	if afterCall {
		// The call is over, so this is what follows it: its
		// notifications/cancelled, which the go-sdk sends under
		// context.WithoutCancel of the call's context, values and all.
		// Tying that POST to the call would abort it before it left: the
		// server would never hear of the cancellation, and the SSE client
		// would take the failed write for a broken connection. It is
		// bounded by the link and by afterCallTimeout instead.
		sent = nil
	}
	if sent != nil && req.Method == http.MethodPost {
		// A tool call's POST ends with the call or the link, not when the
		// go-sdk stops waiting for it: when a concurrent request finds the
		// session gone, the go-sdk abandons this one too, and only its own
		// answer (a 404 or not) tells whether the tool may have run.
		parent = context.WithoutCancel(parent)
	}
	ctx, cancel := context.WithCancel(parent)
	if req.Method == http.MethodGet && t.onStream != nil {
		t.onStream(req.Context(), ctx)
	}
	stop := context.AfterFunc(t.linkCtx, cancel)
	var stopCall func() bool
	if sent != nil {
		stopCall = context.AfterFunc(sent.ctx, cancel)
	}
	var bound *time.Timer
	if afterCall {
		bound = time.AfterFunc(afterCallTimeout, cancel)
	}
	release := func() {
		stop()
		if stopCall != nil {
			stopCall()
		}
		if bound != nil {
			bound.Stop()
		}
		cancel()
	}
	if req.Method == http.MethodGet {
		timer := time.AfterFunc(streamHeaderTimeout, cancel)
		defer timer.Stop()
	}
	req = req.Clone(ctx)
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.via != nil {
		req.Header.Set(egress.ViaHeader, t.via.Via())
	}
	var post *postRecord
	var capture *resultCapture // takes the result from this POST's answer (capture.go)
	if sent != nil && req.Method == http.MethodPost {
		post = sent.begin()
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), post.trace()))
		capture = sent.capture
		if capture != nil && t.captures != nil {
			// Legacy SSE: the answer comes on the link's stream, maybe
			// before this POST's own 202.
			t.captures.add(sent.ctx, headID(req.GetBody), capture)
			capture = nil
		}
	}
	resp, err := t.base.RoundTrip(req)
	refused := errors.Is(err, syscall.ECONNREFUSED)
	if post != nil {
		status := -1 // no answer: the request may have reached the server
		if err == nil {
			status = resp.StatusCode
		}
		// A POST that failed while the link was closing was cut short by
		// it (or failed on its own just then; either way the link is gone).
		post.end(status, refused, err != nil && t.linkCtx.Err() != nil)
	}
	if refused && t.onRefused != nil && t.linkCtx.Err() == nil {
		t.onRefused(err)
	}
	var blocked *egress.BlockedAddressError
	if err != nil && t.onBlocked != nil && errors.As(err, &blocked) {
		t.onBlocked(blocked)
	}
	if err != nil {
		release()
		if req.Method == http.MethodGet && t.linkCtx.Err() != nil {
			return streamRefused(req), nil
		}
		return nil, err
	}
	if t.reach != nil && resp.StatusCode < 300 {
		t.reach.Answered(resp.Header.Values(egress.ReachHeader))
	}
	if resp.StatusCode >= 400 {
		if rec, ok := ctx.Value(statusRecorderKey{}).(*statusRecorder); ok {
			rec.record(resp.StatusCode)
		}
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &releaseOnClose{ReadCloser: t.bound(req, resp, stream, capture), release: release}
	if stream && sent != nil && sent.tok != "" {
		resp.Body = newCallTagger(resp.Body, sent.tok)
	}
	if t.onSSE != nil && stream {
		resp.Body = &lineTap{r: resp.Body, fn: t.onSSE, sse: true}
	}
	return resp, nil
}

// bound returns resp's body, read one bounded message at a time
// (bodylimit.go): the events of a stream, a POST's JSON answer, or, cut at
// the limit, anything else (an error page, which the go-sdk reads whole
// only to look for a JSON-RPC error in it). A tool call's POST that
// capture is given for has its result taken from its answer (capture.go).
func (t *roundTripper) bound(req *http.Request, resp *http.Response, stream bool, capture *resultCapture) io.ReadCloser {
	if t.limit <= 0 {
		return resp.Body
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	lim := bodyLimit{limit: t.limit, log: cmp.Or(t.log, slog.Default()), requestID: noRequestID, post: req.Method == http.MethodPost}
	if lim.post {
		// Only a POST carries a request to answer. A GET's stream lives
		// as long as its session: its reader keeps nothing of the request.
		lim.requestID = sync.OnceValue(func() json.RawMessage { return headID(req.GetBody) })
	}
	switch {
	case capture != nil && ok:
		own := lim.requestID
		lim.take = func(msg []byte) ([]byte, bool) { return capture.take(msg, own()) }
	case t.captures != nil && ok && stream && !lim.post:
		lim.take = t.captures.take
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ok && stream:
		if !lim.post {
			lim.onUnknown = t.onUnknown
		}
		return newBoundedEvents(resp.Body, lim)
	case ok && lim.post && mt == "application/json":
		return newBoundedJSON(resp.Body, resp.ContentLength, lim)
	}
	return &cutBody{r: resp.Body, left: t.limit}
}

func noRequestID() json.RawMessage { return nil }

// streamRefused answers an event-stream GET of a link that is closing. The
// go-sdk retries a failed GET five times with growing delays, on a context
// that nothing cancels while Connect is running, which would hold a
// Shutdown for ten seconds; any HTTP answer ends its retries at once, and
// 405 is the one it reads as "no stream here".
func streamRefused(req *http.Request) *http.Response {
	return &http.Response{
		Status:     "405 Method Not Allowed",
		StatusCode: http.StatusMethodNotAllowed,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{},
		Body:    http.NoBody,
		Request: req,
	}
}

// releaseOnClose frees a request's context when its body is closed.
type releaseOnClose struct {
	io.ReadCloser
	release func()
}

func (b *releaseOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// statusRecorder keeps the last HTTP error status seen by the requests made
// with a context carrying it (withStatusRecorder). The go-sdk reports HTTP
// failures as text ("Not Found"), so this is how a connection attempt learns
// whether to fall back to SSE (400/404/405) or that it needs credentials
// (401/403).
type statusRecorder struct {
	mu     sync.Mutex
	status int
}

type statusRecorderKey struct{}

func withStatusRecorder(ctx context.Context) (context.Context, *statusRecorder) {
	rec := &statusRecorder{}
	return context.WithValue(ctx, statusRecorderKey{}, rec), rec
}

// withoutStatusRecorder hides the recorder from requests made with ctx, for
// probes whose failure is expected (server/discover against an older
// server).
func withoutStatusRecorder(ctx context.Context) context.Context {
	return context.WithValue(ctx, statusRecorderKey{}, nil)
}

func (r *statusRecorder) record(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// Status returns the last recorded error status, or 0.
func (r *statusRecorder) Status() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// sendRecord tells whether a tool call's request reached the server: the
// go-sdk sends a call's POST with the call's context, which carries it.
// Only a call whose POSTs all drew a 404 (or that was never posted) provably
// never ran, and may be retried after the session is re-established.
type sendRecord struct {
	ctx      context.Context // the call's: ends its POSTs
	tok      string          // the call's token, if it answers server requests (calltag.go)
	capture  *resultCapture  // takes the result from the answer, if the caller wants its bytes (capture.go)
	mu       sync.Mutex
	inflight int
	accepted bool // some POST got an answer other than 404, or none at all after it had a connection
	refused  bool // some POST found nothing listening
	// posted: some POST of the call got a connection (some of it may have
	// left), or failed before it had one for a reason of its own (refused,
	// say), which the call's error tells. Not one that the link's close cut
	// short before it had a connection: that one never left.
	posted bool
	status int // the last HTTP error status a POST was answered with
}

type sendRecordKey struct{}

// postRecord is one POST of a call, from begin to end.
type postRecord struct {
	r     *sendRecord
	wired bool // it got a connection; r.mu guards it
}

// begin records a POST about to be sent; send it with the trace of the
// record it returns.
func (r *sendRecord) begin() *postRecord {
	r.mu.Lock()
	r.inflight++
	r.mu.Unlock()
	return &postRecord{r: r}
}

// trace learns when the POST gets a connection: until then nothing of it
// has left.
func (p *postRecord) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		p.r.mu.Lock()
		p.wired, p.r.posted = true, true
		p.r.mu.Unlock()
	}}
}

// neverPosted reports whether the call was never posted. Over HTTP a
// request travels only in a POST, so such a call never left: the go-sdk
// refused it first (its SSE client answers io.EOF, unsent, once the event
// stream has ended), or the link's close cut its POST short while it was
// still connecting (the event stream had ended: the server is gone). It
// waits, at most closeTimeout, for a POST still connecting: one that gets
// a connection, or is still at it then, may have left.
func (r *sendRecord) neverPosted() bool {
	r.settle(closeTimeout, func() bool { return r.posted })
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.posted && r.inflight == 0
}

// end records the answer to the POST: its status, or -1 for none. A
// refused connection is no answer, and proves the POST never left; so does
// any failure before it had a connection. cut says that the POST failed
// while its link was closing.
func (p *postRecord) end(status int, refused, cut bool) {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	if p.wired || refused || !cut {
		r.posted = true
	}
	if status >= 400 {
		r.status = status
	}
	switch {
	case refused:
		r.refused = true
	case status == -1 && !p.wired:
		// it never left: neither an answer nor a sign of the server
	case status != http.StatusNotFound:
		r.accepted = true
	}
}

// errorStatus returns the last HTTP error status a POST of the call was
// answered with, or 0.
func (r *sendRecord) errorStatus() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// wasRefused reports whether the call's POSTs found nothing listening and
// none of them got through: the call never reached the server. Like
// neverRan, it waits at most d for POSTs still in flight (the go-sdk may
// fail the call on the closed event stream first).
func (r *sendRecord) wasRefused(d time.Duration) bool {
	r.settle(d, func() bool { return r.accepted })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused && !r.accepted && r.inflight == 0
}

// settle waits, at most d, until no POST of the call is in flight or
// enough (called with r.mu held) holds.
func (r *sendRecord) settle(d time.Duration, enough func() bool) {
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		done := enough() || r.inflight == 0
		r.mu.Unlock()
		if done || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// neverRan reports whether no POST of the call reached the server's tool.
// The go-sdk may report a failed session before this call's own POST has
// been answered, so it waits, at most d, for POSTs still in flight: one
// that has not been answered by then counts as having reached the server.
func (r *sendRecord) neverRan(d time.Duration) bool {
	r.settle(d, func() bool { return r.accepted })
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.accepted && r.inflight == 0
}
