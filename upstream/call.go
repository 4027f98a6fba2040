package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
	"github.com/switchboard-mcp/switchboard/telemetry"
	"github.com/switchboard-mcp/switchboard/wire"
)

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
func (s *Session) CallTool(ctx context.Context, name string, args any, opts sb.InvokeOptions) (_ *Result, err error) {
	if err := opts.Validate(); err != nil {
		return nil, &CallError{Server: s.cfg.Name, Tool: name, Phase: sb.PhaseToolCall, Kind: ErrInvalidOptions, Message: err.Error(), Err: err}
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Duration(s.callTimeout.Load())
	}
	if opts.MaxTotalTimeout == 0 {
		opts.MaxTotalTimeout = time.Duration(s.maxTotalTimeout.Load())
	}
	if sub, done, ok := s.forInput(ctx, opts.Input, opts.Timeout); ok {
		// A 2026-07-28 client whose capabilities are not this session's,
		// to a server of an older protocol (capset.go).
		defer done()
		return sub.CallTool(ctx, name, args, opts)
	}
	raw, obj, err := normalizeArgs(args)
	if err != nil {
		return nil, &ArgumentError{Server: s.cfg.Name, Tool: name, Message: err.Error()}
	}
	s.inflight.Add(1)
	defer s.inflight.Add(-1)

	start := time.Now()
	// rctx ends with the caller's ctx, the request timer or the hard cap,
	// whose causes tell them apart (timeoutErr).
	rctx, cancelReq := context.WithCancelCause(ctx)
	defer cancelReq(nil)
	if opts.MaxTotalTimeout > 0 {
		total := time.AfterFunc(opts.MaxTotalTimeout, func() { cancelReq(errTotalTimeout) })
		defer total.Stop()
	}
	c := &call{opts: opts, ctx: rctx}
	rctx, span := s.callSpan(rctx, name)
	if span.IsRecording() {
		defer func() { endCallSpan(span, c, err) }()
	}
	c.timer = newCallTimer(opts.Timeout, func() { cancelReq(errRequestTimeout) })
	defer c.timer.stop()

	var tok string
	if opts.OnProgress != nil || opts.ResetTimeoutOnProgress || opts.OnElicitation != nil || opts.OnSampling != nil || opts.OnRoots != nil {
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
		l, cat, err := s.current(rctx, stale)
		if err != nil {
			if te := timeoutErr(); te != nil {
				return nil, te
			}
			return nil, s.unavailable(name, ctx, err)
		}
		// Checked against the lists of the link it is sent on: a retry's
		// new link may list other tools.
		if err := cat.validate(s.cfg.Name, name, obj); err != nil {
			return nil, err
		}
		meta := callMeta{tok: tok, newMeta: l.newMeta}
		if l.version >= protocol20260728 {
			// The 2026-07-28 protocol has no logging/setLevel: the level
			// travels with each request.
			meta.logLevel = relayLogLevel
			if in := opts.Input; in != nil {
				meta.input = in
				if len(in.Capabilities) > 0 && json.Valid(in.Capabilities) {
					meta.newMeta = requestMetaCaps(l.version, &s.opts.ClientInfo, in.Capabilities)
				}
			}
		} else if in := opts.Input; in != nil {
			// A server of an older protocol that asks for input in a
			// result of its own (a go-sdk server does after one round of
			// its requests) reads the answers of the client's retry from
			// the params as a newer one does, and may read the client's
			// capabilities there (capHint).
			if len(in.Responses) > 0 || in.State != "" {
				meta.input = in
			}
			meta.newMeta = capHint(in.Capabilities)
		}
		if span.IsRecording() {
			traceLink(rctx, span, l, &meta)
		}
		l.calls.Add(1)
		res, err := s.wireCall(rctx, l, c, name, raw, meta)
		l.calls.Add(-1)
		if err == nil && res.IsError {
			// A limit that fired while the call ran sent the server a
			// cancellation; a tool error that arrives after it is the
			// server's answer to that (an elicitation it was told to
			// drop, say), and the limit is what the caller should hear.
			if te := timeoutErr(); te != nil {
				return nil, te
			}
		}
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
		we, ok := wire.AsError(err)
		if !ok {
			c.finish()
			var ce *CallError
			if errors.As(err, &ce) {
				return nil, ce // the call's own (a request for input it cannot answer)
			}
			return nil, s.unavailable(name, ctx, err)
		}
		if try == 0 && !we.Sent && we.Kind != wire.KindRefused {
			// The link ended between our picking it and the call's
			// writing; nothing was sent. Wait for the replacement, once.
			telemetry.Event(rctx, "retry", attribute.String("reason", "the connection ended before the call was sent"))
			stale = l
			continue
		}
		if try == 0 && we.Kind == wire.KindSessionMissing {
			// The server has forgotten the session: the request drew a 404
			// and never ran. One reconnect serves every caller that saw the
			// same link fail; then the call is retried once.
			l.expire()
			stale = l
			telemetry.Event(rctx, "reconnect", attribute.String("reason", "the server forgot the session (HTTP 404)"))
			continue
		}
		c.finish()
		return nil, s.wireFailed(name, l, we)
	}
}

// statusAnswer classifies a call whose POST was answered with an HTTP
// error status and no JSON-RPC answer (wire.KindStatus). The status tells
// whether the call ran.
func (s *Session) statusAnswer(tool string, status int) *CallError {
	var msg string
	switch status {
	case http.StatusTooManyRequests:
		msg = "the server answered the call with HTTP 429 Too Many Requests (it is rate limiting); the call did not run: try again later"
	case http.StatusServiceUnavailable:
		msg = "the server answered the call with HTTP 503 Service Unavailable; the call did not run: try again later"
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		msg = fmt.Sprintf("the server answered the call with HTTP %d %s, usually a proxy's answer; the call may or may not have reached the server",
			status, http.StatusText(status))
	case http.StatusInternalServerError:
		msg = "the server answered the call with HTTP 500 Internal Server Error; the call may or may not have run"
	case http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("the server refused the call with HTTP %d %s; the call did not run", status, http.StatusText(status))
	default:
		msg = fmt.Sprintf("the server answered the call with HTTP %d %s", status, http.StatusText(status))
	}
	return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError, Message: msg,
		Err: &HTTPStatusError{StatusCode: status, URL: s.redact.String(s.cfg.URL)}}
}

// callMeta is what CallTool puts in a tool call's _meta: its progress
// token, if it has one, and the log level, for the 2026-07-28 protocol.
type callMeta struct {
	tok, logLevel string
	newMeta       []byte // the link's 2026-07-28 members (link.newMeta); the go-sdk adds its own
	// input is the 2026-07-28 client's own part in requests for input,
	// if the call is made for one on a link of that protocol: its
	// requests for input are its result.
	input *sb.InputRound
	// trace is the members that carry the call's span on a byte stream
	// (telemetry.AppendMeta), header its HTTP headers on a remote link;
	// both nil while tracing is off.
	trace  []byte
	header http.Header
}

func (m callMeta) empty() bool {
	return m.tok == "" && m.logLevel == "" && len(m.newMeta) == 0 && len(m.trace) == 0
}

// mcp is m as the go-sdk's params carry it; nil if empty.
func (m callMeta) mcp() mcp.Meta {
	if m.tok == "" && m.logLevel == "" {
		return nil
	}
	meta := mcp.Meta{}
	if m.tok != "" {
		meta["progressToken"] = m.tok
	}
	if m.logLevel != "" {
		meta[mcp.MetaKeyLogLevel] = m.logLevel
	}
	return meta
}

// appendJSON appends m as the JSON object json.Marshal makes of m.mcp()
// (members in key order), after the trace members if any; nothing if it
// is empty.
func (m callMeta) appendJSON(b []byte) []byte {
	if m.empty() {
		return b
	}
	b = append(b, '{')
	b = append(b, m.trace...)
	if len(m.trace) > 0 && (len(m.newMeta) > 0 || m.logLevel != "" || m.tok != "") {
		b = append(b, ',')
	}
	b = append(b, m.newMeta...)
	if len(m.newMeta) > 0 && (m.logLevel != "" || m.tok != "") {
		b = append(b, ',')
	}
	if m.logLevel != "" {
		b = rawjson.AppendString(b, mcp.MetaKeyLogLevel)
		b = append(b, ':')
		b = rawjson.AppendString(b, m.logLevel)
		if m.tok != "" {
			b = append(b, ',')
		}
	}
	if m.tok != "" {
		b = append(b, `"progressToken":`...)
		b = rawjson.AppendString(b, m.tok)
	}
	return append(b, '}')
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

// checkResult enforces the result size cap and turns isError into a
// *ToolError (returned together with the result).
func (s *Session) checkResult(tool string, res *Result) (*Result, error) {
	if res == nil {
		return nil, &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
			Message: "the server answered with no result", Err: errors.New("nil result")}
	}
	// A result no longer than the cap as sent is within it, unmeasured.
	if len(res.Raw) > s.opts.MaxResultBytes {
		if n := resultSize(res.MustDecode()); n > s.opts.MaxResultBytes {
			return nil, &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrResultTooLarge,
				Message: fmt.Sprintf("the result is %d bytes, over the %d-byte limit", n, s.opts.MaxResultBytes), Err: ErrResultTooLarge}
		}
	}
	if res.IsError {
		return res, &ToolError{Server: s.cfg.Name, Tool: tool, Result: res}
	}
	return res, nil
}

// wireCall sends a call of the tool name with the raw arguments and meta
// on the link's own connection, and returns its result as the server
// wrote it.
//
// A server of the 2026-07-28 protocol may answer a call with a request for
// input instead of a result (resultType "input_required"): what it asks is
// asked of the call's caller (OnElicitation, OnSampling), and the call is
// sent again with the answers and the server's request state, at most
// maxInputRounds times. A call made for a client of that protocol
// (meta.input) returns the request for input as its result instead, and
// sends the answers the client's retry brought.
func (s *Session) wireCall(ctx context.Context, l *link, c *call, name string, args json.RawMessage, meta callMeta) (*Result, error) {
	var answers []byte // the inputResponses and requestState members, if any
	if in := meta.input; in != nil {
		answers = inputMembers(in)
	}
	for round := 0; ; round++ {
		b := make([]byte, 0, 64+len(name)+len(args)+len(meta.newMeta)+len(meta.trace)+len(answers))
		b = append(b, `{"name":`...)
		b = rawjson.AppendString(b, name)
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
		b = append(b, answers...)
		if !meta.empty() {
			b = append(b, `,"_meta":`...)
			b = meta.appendJSON(b)
		}
		b = append(b, '}')
		raw, err := l.conn.Call(ctx, &wire.Request{Method: "tools/call", Params: b, Name: name, Tag: meta.tok, Header: meta.header})
		if err != nil {
			return nil, err
		}
		if meta.input != nil || !inputRequired(raw) {
			res, err := NewResult(raw)
			if err == nil && len(raw) > s.opts.MaxResultBytes {
				_, err = res.Decode() // checkResult measures its payloads
			}
			if err != nil {
				return nil, &wire.Error{Kind: wire.KindProtocol, Sent: true, Err: fmt.Errorf("the server's result: %w", err)}
			}
			return res, nil
		}
		if round == maxInputRounds {
			return nil, &CallError{Server: s.cfg.Name, Tool: name, Phase: sb.PhaseToolCall, Kind: ErrServerError,
				Message: fmt.Sprintf("the server asked for input %d times without a result", maxInputRounds+1)}
		}
		if answers, err = s.fulfil(ctx, c, name, raw); err != nil {
			return nil, err
		}
	}
}

// inputMembers returns the params members that carry a client's answers
// to a request for input: inputResponses and requestState, if any.
func inputMembers(in *sb.InputRound) []byte {
	var b []byte
	if r := bytes.TrimSpace(in.Responses); len(r) > 0 && r[0] == '{' && json.Valid(r) {
		b = append(b, `,"inputResponses":`...)
		b = append(b, r...)
	}
	if in.State != "" {
		b = append(b, `,"requestState":`...)
		b = rawjson.AppendString(b, in.State)
	}
	return b
}

// maxInputRounds bounds the requests for input a call answers.
const maxInputRounds = 8

var inputRequiredValue = []byte(`"input_required"`)

// inputRequired reports whether raw is a request for input (2026-07-28)
// rather than a result.
func inputRequired(raw []byte) bool {
	if !rawjson.Contains(raw, inputRequiredValue) {
		return false
	}
	v, ok := rawjson.Get(raw, "resultType")
	return ok && bytes.Equal(v, inputRequiredValue)
}

// fulfil asks the caller of c what an input-required answer asks, and
// returns the members that carry the answers in the retried call's params.
func (s *Session) fulfil(ctx context.Context, c *call, tool string, raw []byte) ([]byte, error) {
	var asked mcp.CallToolResult
	if err := json.Unmarshal(raw, &asked); err != nil {
		return nil, &wire.Error{Kind: wire.KindProtocol, Sent: true, Err: fmt.Errorf("the server's request for input: %w", err)}
	}
	cannot := func(what string, err error) error {
		msg := fmt.Sprintf("the server asked for input (%s) that the caller cannot give", what)
		if err != nil {
			msg += ": " + err.Error()
		}
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError, Message: msg, Err: err}
	}
	answers := make(mcp.InputResponseMap, len(asked.InputRequests))
	for id, ir := range asked.InputRequests {
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			if c.opts.OnElicitation == nil {
				return nil, cannot("elicitation", nil)
			}
			res, err := c.elicit(ctx, p)
			if err != nil {
				return nil, cannot("elicitation", err)
			}
			answers[id] = res
		case *mcp.CreateMessageParams:
			if c.opts.OnSampling == nil {
				return nil, cannot("sampling", nil)
			}
			res, err := c.sample(ctx, p)
			if err != nil {
				return nil, cannot("sampling", err)
			}
			answers[id] = res
		case *mcp.ListRootsParams:
			// The caller's roots, never Switchboard's: it has none.
			if c.opts.OnRoots == nil {
				return nil, cannot("roots", nil)
			}
			res, err := c.listRoots(ctx)
			if err != nil {
				return nil, cannot("roots", err)
			}
			answers[id] = res
		default:
			return nil, cannot(fmt.Sprintf("%T", ir), nil)
		}
	}
	b := []byte(`,"inputResponses":`)
	enc, err := json.Marshal(answers)
	if err != nil {
		return nil, cannot("encoding the answers", err)
	}
	b = append(b, enc...)
	if asked.RequestState != "" {
		b = append(b, `,"requestState":`...)
		b = rawjson.AppendString(b, asked.RequestState)
	}
	return b, nil
}

// wireFailed classifies a call that failed on the link's own connection,
// from what the wire knows of it (the request was sent: wireCall retries
// one that was not).
func (s *Session) wireFailed(tool string, l *link, we *wire.Error) error {
	if we.Status == http.StatusBadRequest {
		// Some servers answer a session they do not know with 400 (a
		// JSON-RPC error in it or not) rather than 404: the lifecycle asks
		// at once (probe).
		l.notify(probeSoon)
	}
	switch we.Kind {
	case wire.KindRPC:
		return s.serverAnswered(tool, we.RPC)
	case wire.KindRefused:
		l.markDead(fail(sb.PhaseRuntime, sb.CodeConnectionRefused, retryFast, we,
			"connection refused by %s: the server is no longer running", hostOf(s.redact.String(s.cfg.URL))))
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrUnavailable,
			Message: fmt.Sprintf("connection refused by %s: the server is no longer running; the call never ran",
				hostOf(s.redact.String(s.cfg.URL))), Err: we}
	case wire.KindStatus:
		return s.statusAnswer(tool, we.Status)
	case wire.KindSessionMissing:
		l.expire()
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrConnectionLost,
			Message: "the server ended the session (HTTP 404) again on the retry; the call did not run", Err: we}
	case wire.KindTransport:
		if ce := s.refusedCall(tool, we.Err); ce != nil {
			return ce
		}
	case wire.KindTooLarge:
		if l.alive() {
			// The connection dropped that one answer unread and goes on.
			return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrResultTooLarge,
				Message: fmt.Sprintf("the result is over the %d-byte limit: the server's answer went past %d bytes (the limit and 1 MiB for its envelope) and was discarded unread; the session is unaffected",
					s.opts.MaxResultBytes, we.Limit), Err: ErrResultTooLarge}
		}
		l.blameOnce.Do(func() { l.sharedBlame.Store(l.calls.Load() > 0) })
		if !l.sharedBlame.Load() {
			// This was the only call in flight, so the message was its result.
			return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrResultTooLarge,
				Message: fmt.Sprintf("the server sent a message over the %d-byte limit (the result is too large); the connection was reset",
					we.Limit), Err: ErrResultTooLarge}
		}
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrConnectionLost,
			Message: fmt.Sprintf("connection lost during the call; it may or may not have run: the server sent a message over the %d-byte limit; the connection was reset (the result of another call in flight, or of this one)", we.Limit),
			Err:     we}
	case wire.KindProtocol:
		if !l.alive() {
			break // what the server sent ended the connection: it was lost under the call
		}
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
			Message: s.redact.String(we.Error()), Err: we}
	}
	// The connection failed under the call. Name the real cause (the
	// process's exit status, the closed stream) once the link knows it.
	msg := describe(we.Err)
	if we.Kind == wire.KindProtocol {
		msg = we.Error()
	}
	t := time.NewTimer(exitReapGrace)
	select {
	case <-l.done:
		if l.cause != nil {
			msg = s.redact.String(l.cause.msg)
		}
	case <-t.C:
		// The watcher is late; if Switchboard closed the link, that is
		// the cause it would have given.
		if f := l.ownClose(); f != nil {
			msg = s.redact.String(f.msg)
		}
	}
	t.Stop()
	return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseRuntime, Kind: ErrConnectionLost,
		Message: "connection lost during the call; it may or may not have run: " + msg, Err: we}
}

// serverAnswered is a call the server answered with a JSON-RPC error: the
// connection is fine. Its message is shown to people and, through /mcp,
// to models: it is scrubbed, and only the scrubbed copy kept in the chain.
func (s *Session) serverAnswered(tool string, rpc *jsonrpc.Error) error {
	scrubbed := s.scrub(rpc)
	return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
		Message: fmt.Sprintf("the server answered with JSON-RPC error %d: %s", scrubbed.Code, scrubbed.Message), Err: scrubbed}
}

// resultSize measures a result by its payloads, which dominate: text,
// binary data, embedded resources and structured content. The cap applies
// to them, not to the envelope, so that a result is refused for what it
// holds. A result no longer than the cap as sent is within it, unmeasured.
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
		// As written, not with <, > and & escaped six bytes long.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(res.StructuredContent) == nil {
			n += b.Len() - 1 // Encode's newline
		}
	}
	return n
}

// scrub returns the server's JSON-RPC error with its message and data
// scrubbed of secrets.
func (s *Session) scrub(rpc *jsonrpc.Error) *jsonrpc.Error {
	scrubbed := &jsonrpc.Error{Code: rpc.Code, Message: s.redact.String(rpc.Message)}
	if len(rpc.Data) > 0 {
		if data := s.redact.String(string(rpc.Data)); json.Valid([]byte(data)) {
			scrubbed.Data = json.RawMessage(data)
		}
	}
	return scrubbed
}
