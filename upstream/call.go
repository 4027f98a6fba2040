package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// Errors of CallTool. Each failure is a typed value (*TimeoutError,
// *CallError, *ToolError, *ArgumentError, *UnknownToolError) that matches
// one of these with errors.Is.
var (
	// ErrTimeout: the per-request timeout or the total cap fired. The
	// server was sent notifications/cancelled.
	ErrTimeout = sb.NewError(sb.CodeTimeout, "tool call timed out")
	// ErrCancelled: the caller's context ended. The server was sent
	// notifications/cancelled.
	ErrCancelled = sb.NewError(sb.CodeCancelled, "tool call cancelled")
	// ErrConnectionLost: the connection dropped while the call was in
	// flight. The call is not retried: the tool may have run.
	ErrConnectionLost = sb.NewError(sb.CodeConnectionLost, "connection lost during the tool call")
	// ErrToolError: the tool ran and reported failure (isError). The
	// *ToolError keeps the whole result.
	ErrToolError = sb.NewError(sb.CodeToolError, "tool reported an error")
	// ErrInvalidArguments: the arguments do not match the tool's input
	// schema; nothing was sent.
	ErrInvalidArguments = sb.NewError(sb.CodeInvalidArguments, "invalid tool arguments")
	// ErrUnknownTool: the server has no tool of that name; nothing was sent.
	ErrUnknownTool = sb.NewError(sb.CodeUnknownTool, "unknown tool")
	// ErrResultTooLarge: the result exceeded Options.MaxResultBytes.
	ErrResultTooLarge = sb.NewError(sb.CodeResultTooLarge, "tool result too large")
	// ErrInvalidOptions: the InvokeOptions were rejected; nothing was sent.
	ErrInvalidOptions = sb.NewError(sb.CodeInvalidOptions, "invalid invoke options")
	// ErrServerError: the server answered the call with a JSON-RPC error.
	ErrServerError = sb.NewError(sb.CodeServerError, "server rejected the tool call")
)

// Which limit ended a timed-out call.
const (
	LimitRequest = "request" // the per-request timeout (InvokeOptions.Timeout)
	LimitTotal   = "total"   // the hard cap (InvokeOptions.MaxTotalTimeout)
)

// TimeoutError is a call ended by one of its limits.
type TimeoutError struct {
	Server, Tool string
	Limit        string        // LimitRequest or LimitTotal
	Timeout      time.Duration // the limit's value
	Elapsed      time.Duration // since the call started
	LastProgress *sb.Progress  // nil if none arrived
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s/%s: %s timeout of %s fired after %s", e.Server, e.Tool, e.Limit, e.Timeout, e.Elapsed.Round(time.Millisecond))
	if p := e.LastProgress; p != nil {
		msg += fmt.Sprintf("; last progress %g", p.Progress)
		if p.Total > 0 {
			msg += fmt.Sprintf("/%g", p.Total)
		}
		if p.Message != "" {
			msg += " (" + p.Message + ")"
		}
	}
	return msg
}

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// ErrorCode reports sb.CodeTimeout to sb.CodeOf.
func (e *TimeoutError) ErrorCode() sb.Code { return sb.CodeTimeout }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *TimeoutError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

// CallError is a call that failed without a result: cancelled, connection
// lost, session unavailable, or rejected by the server.
type CallError struct {
	Server, Tool string
	Phase        sb.Phase
	Kind         error // one of the Err values above
	Message      string
	Err          error // the underlying cause
}

func (e *CallError) Error() string { return fmt.Sprintf("%s/%s: %s", e.Server, e.Tool, e.Message) }

// Unwrap returns Kind first, so that sb.CodeOf names the call's kind of
// failure rather than its cause's.
func (e *CallError) Unwrap() []error { return []error{e.Kind, e.Err} }

// ErrorPhase reports Phase to sb.PhaseOf.
func (e *CallError) ErrorPhase() sb.Phase { return e.Phase }

// ToolError is a result with isError set. The result is kept whole.
type ToolError struct {
	Server, Tool string
	Result       *mcp.CallToolResult
}

func (e *ToolError) Error() string {
	msg := "the tool reported an error"
	for _, c := range e.Result.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			msg = t.Text
			break
		}
	}
	return fmt.Sprintf("%s/%s: %s", e.Server, e.Tool, msg)
}

func (e *ToolError) Is(target error) bool { return target == ErrToolError }

// ErrorCode reports sb.CodeToolError to sb.CodeOf.
func (e *ToolError) ErrorCode() sb.Code { return sb.CodeToolError }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *ToolError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

// callTimer is the per-request timer of one call: reset by progress (when
// asked), paused while a person answers an elicitation.
type callTimer struct {
	mu       sync.Mutex
	d        time.Duration
	t        *time.Timer
	deadline time.Time     // when t fires, while running
	paused   int           // elicitations in progress
	left     time.Duration // time remaining when paused
}

func newCallTimer(d time.Duration, fire func()) *callTimer {
	return &callTimer{d: d, t: time.AfterFunc(d, fire), deadline: time.Now().Add(d)}
}

func (c *callTimer) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 {
		c.left = c.d
		return
	}
	if c.t.Stop() { // not fired yet
		c.t.Reset(c.d)
		c.deadline = time.Now().Add(c.d)
	}
}

func (c *callTimer) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused == 1 && c.t.Stop() {
		c.left = time.Until(c.deadline)
	}
}

func (c *callTimer) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused == 0 && c.left > 0 {
		c.t.Reset(c.left)
		c.deadline = time.Now().Add(c.left)
		c.left = 0
	}
}

func (c *callTimer) stop() { c.t.Stop() }

// call is one CallTool in flight, as the session's notification handlers
// see it.
type call struct {
	opts  sb.InvokeOptions
	timer *callTimer
	ctx   context.Context // ends with the call (total cap or caller)

	mu           sync.Mutex
	lastProgress *sb.Progress
	done         bool // returned: late notifications are dropped
}

// progress delivers one notification. The lock is held through the
// callback so that finish, and with it the return of CallTool, waits for a
// callback in progress: no callback ever runs after the call returned.
func (c *call) progress(p *mcp.ProgressNotificationParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return // sent after the result: too late
	}
	pr := sb.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}
	c.lastProgress = &pr
	if c.opts.ResetTimeoutOnProgress {
		c.timer.reset()
	}
	if c.opts.OnProgress != nil {
		c.opts.OnProgress(pr)
	}
}

func (c *call) finish() *sb.Progress {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	return c.lastProgress
}

// calls tracks a session's calls in flight, for routing progress (by
// token) and elicitation requests.
type calls struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[string]*call
}

func (cs *calls) add(c *call) string {
	tok := "sb-" + strconv.FormatUint(cs.next.Add(1), 10)
	cs.mu.Lock()
	if cs.m == nil {
		cs.m = make(map[string]*call)
	}
	cs.m[tok] = c
	cs.mu.Unlock()
	return tok
}

func (cs *calls) remove(tok string) {
	cs.mu.Lock()
	delete(cs.m, tok)
	cs.mu.Unlock()
}

func (cs *calls) byToken(tok any) *call {
	s, ok := tok.(string)
	if !ok {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.m[s]
}

// only returns the one call in flight that accepts a server request
// (elicitation or sampling), as told by accepts. The protocol does not say
// which request a server request belongs to (over stdio it cannot), so with
// several candidates none is chosen: answering one caller's question with
// another caller's person, or model, would be worse than refusing.
func (cs *calls) only(accepts func(*call) bool) (*call, int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var found *call
	n := 0
	for _, c := range cs.m {
		if accepts(c) {
			found = c
			n++
		}
	}
	if n != 1 {
		return nil, n
	}
	return found, 1
}

// serverRequestCall finds the call a server request belongs to.
func (s *Session) serverRequestCall(kind string, accepts func(*call) bool) (*call, error) {
	c, n := s.calls.only(accepts)
	switch {
	case c != nil:
		return c, nil
	case n == 0:
		return nil, fmt.Errorf("no caller of %s is able to answer %s requests", s.cfg.Name, kind)
	}
	return nil, fmt.Errorf("%d calls to %s accept %s at once; cannot tell which one this request belongs to", n, s.cfg.Name, kind)
}

// during runs fn on behalf of call c: c's request timer is paused (a
// person or a model is thinking), and fn's context ends with the call.
func (c *call) during(ctx context.Context, fn func(ctx context.Context) error) error {
	c.timer.pause()
	defer c.timer.resume()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	return fn(ctx)
}

// onSample is the go-sdk's sampling handler for every link of the session.
func (s *Session) onSample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c, err := s.serverRequestCall("sampling", func(c *call) bool { return c.opts.OnSampling != nil })
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	err = c.during(ctx, func(ctx context.Context) error {
		out, err := c.opts.OnSampling(ctx, params)
		if err != nil {
			return err
		}
		return json.Unmarshal(out, &res)
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// onElicit is the go-sdk's elicitation handler for every link of the session.
func (s *Session) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if invoked, ok := ctx.Value(elicitInvokedKey{}).(*bool); ok {
		*invoked = true
	}
	c, err := s.serverRequestCall("elicitation", func(c *call) bool { return c.opts.OnElicitation != nil })
	if err != nil {
		return nil, err
	}
	p := req.Params
	er := sb.ElicitationRequest{Message: p.Message, Mode: p.Mode, URL: p.URL}
	if p.RequestedSchema != nil {
		er.RequestedSchema, _ = json.Marshal(p.RequestedSchema)
	}
	var resp sb.ElicitationResponse
	err = c.during(ctx, func(ctx context.Context) (err error) {
		resp, err = c.opts.OnElicitation(ctx, er)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ElicitResult{Action: resp.Action, Content: resp.Content}, nil
}

var (
	errRequestTimeout = errors.New("request timeout")
	errTotalTimeout   = errors.New("total timeout")
)

// CallTool calls a tool of the server, bounded and observable per opts.
//
// It waits for a connecting session within the call's timeout and fails at
// once for a session in error. Arguments are checked against the tool's
// input schema before anything is sent. A timeout or a cancelled ctx sends
// notifications/cancelled for this request and leaves the session usable.
// If the server has forgotten the session (HTTP 404 on Streamable HTTP),
// the session reconnects once for all callers and the call is retried once,
// since the request provably never ran. A result with isError is returned
// together with a *ToolError. No failure is ever returned as an empty
// success.
func (s *Session) CallTool(ctx context.Context, name string, args any, opts sb.InvokeOptions) (*mcp.CallToolResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, &CallError{Server: s.cfg.Name, Tool: name, Phase: sb.PhaseToolCall, Kind: ErrInvalidOptions, Message: err.Error(), Err: err}
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Duration(s.callTimeout.Load())
	}
	if opts.MaxTotalTimeout == 0 {
		opts.MaxTotalTimeout = time.Duration(s.maxTotalTimeout.Load())
	}
	raw, obj, err := normalizeArgs(args)
	if err != nil {
		return nil, &ArgumentError{Server: s.cfg.Name, Tool: name, Message: err.Error()}
	}

	start := time.Now()
	ctx, cancelTotal := withTotalCap(ctx, opts.MaxTotalTimeout)
	defer cancelTotal()

	c := &call{opts: opts, ctx: ctx}
	rctx, cancelReq := context.WithCancelCause(ctx)
	defer cancelReq(nil)
	c.timer = newCallTimer(opts.Timeout, func() { cancelReq(errRequestTimeout) })
	defer c.timer.stop()

	var tok string
	if opts.OnProgress != nil || opts.ResetTimeoutOnProgress || opts.OnElicitation != nil || opts.OnSampling != nil {
		tok = s.calls.add(c)
		defer s.calls.remove(tok)
	}

	timeoutErr := func() error {
		switch context.Cause(rctx) {
		case errRequestTimeout:
			return &TimeoutError{Server: s.cfg.Name, Tool: name, Limit: LimitRequest, Timeout: opts.Timeout, Elapsed: time.Since(start), LastProgress: c.finish()}
		case errTotalTimeout:
			return &TimeoutError{Server: s.cfg.Name, Tool: name, Limit: LimitTotal, Timeout: opts.MaxTotalTimeout, Elapsed: time.Since(start), LastProgress: c.finish()}
		}
		return nil
	}

	var stale *link
	for try := 0; ; try++ {
		l, err := s.current(rctx, stale)
		if err != nil {
			if te := timeoutErr(); te != nil {
				return nil, te
			}
			return nil, s.unavailable(name, ctx, err)
		}
		if try == 0 {
			s.mu.Lock()
			cat := s.catalog
			s.mu.Unlock()
			if err := cat.validate(s.cfg.Name, name, obj); err != nil {
				return nil, err
			}
		}
		params := &mcp.CallToolParams{Name: name, Arguments: raw}
		if tok != "" {
			params.SetProgressToken(tok)
		}
		if r := l.cs.InitializeResult(); r != nil && r.ProtocolVersion >= protocol20260728 {
			// The 2026-07-28 protocol has no logging/setLevel: the level
			// travels with each request.
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[mcp.MetaKeyLogLevel] = relayLogLevel
		}
		sent := &sendRecord{ctx: rctx}
		res, err := l.cs.CallTool(context.WithValue(rctx, sendRecordKey{}, sent), params)
		if err == nil {
			c.finish()
			return s.checkResult(name, res)
		}
		if te := timeoutErr(); te != nil {
			return nil, te
		}
		if ctx.Err() != nil {
			c.finish()
			return nil, &CallError{Server: s.cfg.Name, Tool: name, Phase: sb.PhaseToolCall, Kind: ErrCancelled,
				Message: "cancelled by the caller: " + context.Cause(ctx).Error(), Err: context.Cause(ctx)}
		}
		if try == 0 && l.transport == sb.TransportStreamableHTTP && (isSessionMissing(err) || l.sessionGone()) &&
			sent.neverRan(closeTimeout) {
			// The server has forgotten the session, and this request either
			// drew a 404 itself or was refused before it was sent: it never
			// ran. One reconnect serves every caller that saw the same link
			// fail; then the call is retried once.
			l.expire()
			stale = l
			continue
		}
		c.finish()
		return nil, s.callFailed(name, l, err)
	}
}

// withTotalCap applies the hard cap, if any.
func withTotalCap(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, errTotalTimeout)
}

// unavailable converts a failure to get a live link into a call error.
func (s *Session) unavailable(tool string, ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrCancelled,
			Message: "cancelled by the caller while waiting for the server to connect", Err: context.Cause(ctx)}
	}
	var uerr *Error
	if errors.As(err, &uerr) {
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: uerr.Phase, Kind: ErrUnavailable,
			Message: "server unavailable: " + uerr.Message, Err: err}
	}
	return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrUnavailable, Message: err.Error(), Err: err}
}

// callFailed classifies an error from the go-sdk's CallTool.
func (s *Session) callFailed(tool string, l *link, err error) error {
	var rpc interface{ ErrorCode() int64 }
	if errors.As(err, &rpc) && !isConnectionError(err) {
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
			Message: "the server rejected the call: " + err.Error(), Err: err}
	}
	if l.oversized.Load() {
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrResultTooLarge,
			Message: fmt.Sprintf("the server sent a message over the %d-byte limit (the result is too large); the connection was reset",
				s.opts.MaxResultBytes+frameOverhead), Err: ErrResultTooLarge}
	}
	// The connection failed under the call. Name the real cause (the
	// process's exit status, the closed stream) once the link knows it.
	msg := describe(err)
	t := time.NewTimer(exitReapGrace)
	select {
	case <-l.done:
		if l.cause != nil {
			msg = s.redact.String(l.cause.msg)
		}
	case <-t.C:
	}
	t.Stop()
	return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrConnectionLost,
		Message: "connection lost during the call; it may or may not have run: " + msg, Err: err}
}

// isSessionMissing reports whether err comes from the server having
// forgotten the session (HTTP 404). The go-sdk wraps ErrSessionMissing
// with %v once the connection has failed, so its text is matched too.
func isSessionMissing(err error) bool {
	return err != nil && (errors.Is(err, mcp.ErrSessionMissing) || strings.Contains(err.Error(), mcp.ErrSessionMissing.Error()))
}

// The go-sdk's JSON-RPC layer reports a connection that is shutting down
// as wire errors with these codes ("client is closing", "server is
// closing"), which are not answers from the server.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
)

func isConnectionError(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	var coded interface{ ErrorCode() int64 }
	if errors.As(err, &coded) {
		c := coded.ErrorCode()
		return c == codeClientClosing || c == codeServerClosing
	}
	return false
}

// checkResult enforces the result size cap and turns isError into a
// *ToolError (returned together with the result).
func (s *Session) checkResult(tool string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if res == nil {
		return nil, &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
			Message: "the server answered with no result", Err: errors.New("nil result")}
	}
	if n := resultSize(res); n > s.opts.MaxResultBytes {
		return nil, &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrResultTooLarge,
			Message: fmt.Sprintf("the result is %d bytes, over the %d-byte limit", n, s.opts.MaxResultBytes), Err: ErrResultTooLarge}
	}
	if res.IsError {
		return res, &ToolError{Server: s.cfg.Name, Tool: tool, Result: res}
	}
	return res, nil
}

// resultSize approximates a result's size by its payloads, which dominate:
// text, binary data and embedded resources.
func resultSize(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(c.Text)
		case *mcp.ImageContent:
			n += len(c.Data)
		case *mcp.AudioContent:
			n += len(c.Data)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				n += len(c.Resource.Text) + len(c.Resource.Blob)
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			n += len(b)
		}
	}
	return n
}

// normalizeArgs turns the caller's arguments into JSON and its decoded
// object: nil becomes {}, a json.RawMessage or []byte is checked, anything
// else is marshalled. The object is decoded once, here, for the schema
// check.
func normalizeArgs(args any) (json.RawMessage, map[string]any, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), map[string]any{}, nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, nil, fmt.Errorf("arguments cannot be encoded as JSON: %w", err)
		}
		raw = b
	}
	if len(raw) == 0 {
		return json.RawMessage("{}"), map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("arguments must be a JSON object, not %s", jsonKind(v))
	}
	return raw, obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
