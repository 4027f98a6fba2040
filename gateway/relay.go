package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
	"github.com/switchboard-mcp/switchboard/telemetry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// The relay serves the hot request of both endpoints, tools/call, on a
// stateful session of an endpoint (endpoint.go) and in the stateless mode
// (relay_stateless.go), on the aggregate, per-server and toolset endpoints
// alike, without the go-sdk's server: it reads the envelope's few fields
// from the bytes (internal/rawjson), runs the call through the executor as
// Gateway.call does (timeouts, progress, metrics, per-client sessions, the
// typed errors), and writes the upstream's result bytes back with the
// client's id (upstream/relay.go relays them on stdio links). The
// upstream's requests to a client that declared elicitation or sampling
// ride the call's stream, and the client's answers come back through
// serveRelay (relay_requests.go). Every other message goes to the
// session's transport, and so to the go-sdk's server:
//
//   - a tool the mirror does not show yet (the go-sdk path waits for
//     readiness and names the unknown tool), or one a toolset does not
//     allow (it answers as for an unknown tool);
//   - params beyond name, arguments and _meta, a batch, anything the
//     scanner does not read plainly (a key of _meta spelled with escapes);
//     the members of _meta that only the 2026-07-28 protocol sends, which
//     the go-sdk's stateful server refuses;
//   - a session not initialized yet, or a request whose
//     Mcp-Protocol-Version is not the session's.

// errCancelledByClient is the cause of a relayed call the client cancelled.
var errCancelledByClient = errors.New("cancelled by the client")

// relayEnvelope is what the relay reads of a POSTed message.
type relayEnvelope struct {
	id, method, params []byte
	response           []byte // the whole message, if it is a response (a result or an error)
	name               string
	args, token        []byte // raw arguments and progress token, if any
	requestID          []byte // notifications/cancelled: the request it cancels
	// The members of params._meta that the 2026-07-28 protocol defines
	// (SEP-2575), raw; other is set if it names one more of them.
	version, caps, info []byte
	other               bool
	// responses and state are a retry's inputResponses and requestState,
	// for a call of the tasks path (tasks.go), which reads them.
	responses []byte
	state     string
	// traceparent and tracestate are the W3C trace context members of
	// _meta, raw, if any (telemetry.Extract).
	traceparent, tracestate []byte
}

// The members of _meta by which a request of the 2026-07-28 protocol
// identifies its client.
const (
	metaPrefix       = "io.modelcontextprotocol/"
	metaVersion      = metaPrefix + "protocolVersion"
	metaCapabilities = metaPrefix + "clientCapabilities"
	metaClientInfo   = metaPrefix + "clientInfo"
)

// parseEnvelope reads a single JSON-RPC message. ok is false for anything
// the relay leaves to the go-sdk, which includes a body that is not UTF-8:
// encoding/json reads its bad bytes as U+FFFD, and the relay would forward
// them as they are.
func parseEnvelope(body []byte) (env relayEnvelope, ok bool) {
	if !utf8.Valid(body) {
		return env, false
	}
	version, other, outcomes := false, false, 0
	ok = rawjson.Members(body, func(k, v []byte) bool {
		switch string(k) {
		case "jsonrpc":
			version = string(v) == `"2.0"`
		case "id":
			env.id = v
		case "method":
			env.method = v
		case "params":
			env.params = v
		case "result", "error":
			outcomes++
		default:
			other = true
			return false
		}
		return true
	}) == nil && !other && version
	if ok && outcomes == 1 && env.method == nil && env.params == nil && scalarID(env.id) {
		// A client's answer to a request of the relay's (relay_requests.go).
		env.response = body
		return env, true
	}
	if !ok || outcomes > 0 || len(env.method) == 0 || env.params == nil {
		return env, false
	}
	switch string(env.method) {
	case `"tools/call"`:
		// An id is a string or a number; arguments, if any, an object
		// (the go-sdk path answers the others).
		return env, scalarID(env.id) && env.readCall() && (env.args == nil || env.args[0] == '{')
	case `"notifications/cancelled"`:
		rid, found := rawjson.Get(env.params, "requestId")
		env.requestID = rid
		return env, found && env.id == nil
	}
	return env, false
}

// readCall reads the params of tools/call.
func (env *relayEnvelope) readCall() bool {
	var meta []byte
	named, other := false, false
	if rawjson.Members(env.params, func(k, v []byte) bool {
		switch string(k) {
		case "name":
			env.name, named = rawjson.String(v)
			other = !named
		case "arguments":
			env.args = v
		case "_meta":
			meta = v
		default:
			other = true
		}
		return !other
	}) != nil || other || !named {
		return false
	}
	if meta == nil || string(meta) == "null" {
		return true
	}
	// A key spelled with escapes would hide a member the go-sdk reads:
	// such a request goes to the go-sdk.
	odd := false
	return rawjson.Members(meta, func(k, v []byte) bool {
		switch key := string(k); {
		case bytes.IndexByte(k, '\\') >= 0:
			odd = true
		case key == "progressToken":
			if string(v) != "null" {
				env.token = v
				odd = !scalarID(v) // a token is a string or a number
			}
		case key == metaVersion:
			env.version = v
		case key == metaCapabilities:
			env.caps = v
		case key == metaClientInfo:
			env.info = v
		case key == telemetry.Traceparent:
			env.traceparent = v
		case key == telemetry.Tracestate:
			env.tracestate = v
		case strings.HasPrefix(key, metaPrefix):
			env.other = true
		}
		return !odd
	}) == nil && !odd
}

// scalarID reports whether the raw JSON value v is a string or a number,
// what JSON-RPC ids and progress tokens are.
func scalarID(v []byte) bool {
	return len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// serveRelay serves body, a POST of the session s, if it is for the
// gateway to answer (see above), and reports whether it did.
func (g *Gateway) serveRelay(w http.ResponseWriter, r *http.Request, s *session, body []byte) bool {
	env, ok := parseEnvelope(body)
	switch {
	case !ok:
		return false
	case env.response != nil:
		return s.deliver(env.id, env.response, w)
	case string(env.method) == `"notifications/cancelled"`:
		return s.cancel(env.requestID, w)
	}
	// The header must name the version the session runs: a request of
	// another (the conformance suite's SSE tests send 2025-03-26 on a
	// 2025-11-25 session) is the go-sdk's, which answers it on a stream.
	p := s.ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.ProtocolVersion != r.Header.Get("Mcp-Protocol-Version") {
		return false
	}
	// The go-sdk's stateful server refuses the members of _meta that only
	// the 2026-07-28 protocol sends.
	if env.version != nil || env.caps != nil || env.info != nil || env.other {
		return false
	}
	o, _, shown := s.m.relayTool(env.name)
	if !shown || !s.m.allows(sb.KindTool, o.server, o.name) {
		return false
	}
	g.served.Add(1)
	g.relayCall(w, s.m.auditedRequest(r), s, env, o, nil)
	return true
}

// asksAsOld reports whether server's live session negotiated a version
// before 2026-07-28, whose requests to the client come as requests during
// a call (or if it is not connected: the call then fails as it would).
func (g *Gateway) asksAsOld(ctx context.Context, server string) bool {
	s, ok := g.src.Session(server)
	if !ok || s == nil {
		return false
	}
	cs, err := s.Client(ctx)
	return err == nil && olderThan2026(cs)
}

// asksClient reports whether the client of p declared that it can be
// asked for elicitation or sampling: its relayed calls carry the
// upstream's requests to it (relay_requests.go).
func asksClient(p *mcp.InitializeParams) bool {
	return p.Capabilities.Elicitation != nil || p.Capabilities.Sampling != nil
}

// relayRequest reads the message of r, a stateless request, if the relay
// may serve it: the headers are those the go-sdk's handler takes, and the
// envelope is plain (parseEnvelope). r's body is restored for the go-sdk
// in any case.
func relayRequest(r *http.Request) (relayEnvelope, bool) {
	accept := r.Header.Get("Accept")
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(accept, "text/event-stream") || !strings.Contains(accept, "application/json") ||
		len(r.Header.Values("Last-Event-ID")) > 0 { // the go-sdk refuses it on a POST
		return relayEnvelope{}, false
	}
	body, err := readBody(r)
	r.Body = &rereadBody{read: body, rest: r.Body}
	if err != nil || len(body) > relayMaxBody {
		return relayEnvelope{}, false
	}
	return parseEnvelope(body)
}

// relayTool returns what the exposed tool name stands for, and the tool
// as the server listed it, if the mirror shows it.
func (m *mirror) relayTool(name string) (origin, *mcp.Tool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.tools[name]
	if !ok || m.search { // in search mode, the tools are not listed (search.go)
		return origin{}, nil, false
	}
	t := m.shown[o.server].tools[name]
	return o, t, t != nil
}

// principalName is the name of the principal of r (sb.PrincipalFrom), ""
// if none.
func principalName(r *http.Request) string {
	p, _ := sb.PrincipalFrom(r.Context())
	return p.Name
}

// readBody reads at most relayMaxBody+1 bytes of r's body, in one piece
// when its length is known.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= relayMaxBody {
		body := make([]byte, n)
		k, err := io.ReadFull(r.Body, body)
		return body[:k], err
	}
	return io.ReadAll(io.LimitReader(r.Body, relayMaxBody+1))
}

// rereadBody is a request body the relay read ahead of the go-sdk: what
// it read, then the rest.
type rereadBody struct {
	read []byte
	rest io.ReadCloser
}

func (b *rereadBody) Read(p []byte) (int, error) {
	if len(b.read) == 0 {
		return b.rest.Read(p)
	}
	n := copy(p, b.read)
	b.read = b.read[n:]
	return n, nil
}

func (b *rereadBody) Close() error { return b.rest.Close() }

// relayMaxBody bounds the body the relay reads; a larger one goes to the
// go-sdk, whose own limit applies.
const relayMaxBody = 4 << 20

// relayCall runs one tools/call and writes its answer: as server-sent
// events if progress came first (progress, then the response), else as
// one JSON body.
//
// s is the session of the call, nil for a stateless request; info, for a
// stateless request only, is the serverInfo that its result carries
// (statelessResult).
func (g *Gateway) relayCall(w http.ResponseWriter, r *http.Request, s *session, env relayEnvelope, o origin, info []byte) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx, span := g.relaySpan(ctx, r, s, env, o)
	sse := &sseWriter{w: w}
	if s != nil {
		key := string(env.id)
		s.mu.Lock()
		s.calls[key] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.calls, key)
			s.mu.Unlock()
		}()
		w.Header().Set("Mcp-Session-Id", s.id)
		ctx = g.clients.withClient(ctx, s.ss, g.src.ReleaseClient)
	}
	opts := sb.InvokeOptions{ResetTimeoutOnProgress: true, MaxTotalTimeout: g.totalCap(o.server)}
	if s == nil {
		// A stateless call's client is of the 2026-07-28 protocol
		// (generation.go).
		opts.Input = &sb.InputRound{Capabilities: env.caps, Responses: env.responses, State: env.state}
	}
	var fwd *progressForwarder
	var notify func(sb.Progress)
	if token := env.token; token != nil { // not env: the closure would move it to the heap
		notify = func(p sb.Progress) { sse.event(progressMessage(token, p)) }
	}
	// A first call of a 2026-07-28 client to a 2025-11-25 upstream is
	// bridged: the upstream's requests become requests for input
	// (bridge.go), and the bridge forwards the progress; the retry is the
	// go-sdk path's (it has params the relay does not read). A 2026-07-28
	// upstream's own requests for input pass through as its result.
	bridging := s == nil && g.asksAsOld(ctx, o.server)
	if notify != nil && !bridging {
		fwd = newProgressForwarder(notify)
		opts.OnProgress = fwd.enqueue
	}
	var asks *callRequests
	if s != nil {
		// roots/list goes to every client (relay_requests.go).
		asks = g.serverRequests(ctx, s, sse, &opts)
	}
	var args any
	if len(env.args) > 0 {
		args = json.RawMessage(env.args)
	}
	var res *upstream.Result
	var err error
	if bridging {
		res, err = g.bridgeCall(ctx, o.server, o.name, args, opts, nil, notify)
	} else {
		res, err = g.ex.Execute(ctx, o.server+"/"+o.name, args, opts)
	}
	if span.IsRecording() {
		endRelaySpan(ctx, span, res, err)
	}
	if asks != nil {
		asks.end() // nothing more of them on the stream after this
	}
	if fwd != nil {
		fwd.flush()
	}
	if errors.Is(context.Cause(ctx), errCancelledByClient) {
		sse.start() // a cancelled request is not answered: its stream just ends
		return
	}
	var msg [][]byte // the response, in pieces: the result is not copied
	te := asToolError(err)
	if res == nil && te != nil {
		res = te.Result
	}
	status := http.StatusOK
	answered := (err == nil || te != nil || errors.Is(err, upstream.ErrToolError)) && res != nil
	var raw json.RawMessage
	if answered {
		raw = res.Raw
		if info != nil {
			raw, err = g.taskResult(r, o.server, raw) // a task's id is namespaced (tasks.go)
			answered = err == nil
		}
	}
	if answered {
		msg = resultResponse(env.id, raw, info)
	} else {
		res, err := g.answer(ctx, o.server, o.name, nil, err)
		msg = encodeResponse(env.id, res, err, info)
		if info != nil {
			status = statelessErrorStatus(err)
		}
	}
	if sse.started {
		sse.event(msg...)
		return
	}
	// Nothing came before the response: it goes as one JSON body, which
	// costs the client less to read than a stream.
	n := 0
	for _, p := range msg {
		n += len(p)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	for _, p := range msg {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}

// asToolError returns the *upstream.ToolError of err, if it has one. Apart,
// so that a call without an error allocates no target for errors.As.
func asToolError(err error) *upstream.ToolError {
	if err == nil {
		return nil
	}
	var te *upstream.ToolError
	errors.As(err, &te)
	return te
}

// responseTail ends every response that response and resultResponse
// piece together. Never written to.
var responseTail = []byte("}")

// response is a JSON-RPC response with id and a result already encoded,
// in pieces.
func response(id, result []byte) [][]byte {
	return [][]byte{responseHead(id), result, responseTail}
}

// responseHead is a response to the request id up to its result.
func responseHead(id []byte) []byte {
	head := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":`)+len(id))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	return append(head, `,"result":`...)
}

// resultResponse is the response to the request id with the encoded
// result, shaped as a stateless result if info is not nil.
func resultResponse(id, result, info []byte) [][]byte {
	if info == nil {
		return response(id, result)
	}
	shaped, err := statelessResult(result, info)
	if err != nil {
		return errorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's result: " + err.Error()})
	}
	return append([][]byte{responseHead(id)}, append(shaped, responseTail)...)
}

// encodeResponse encodes a result, or a JSON-RPC error, as the response
// to the request id; the result shaped as a stateless one if info is not
// nil.
func encodeResponse(id []byte, res *mcp.CallToolResult, rpcErr *jsonrpc.Error, info []byte) [][]byte {
	if rpcErr != nil {
		return errorResponse(id, rpcErr)
	}
	// The result's own MarshalJSON, not json.Marshal, which would
	// validate and compact its whole output once more.
	b, err := res.MarshalJSON()
	if err != nil {
		return errorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()})
	}
	return resultResponse(id, b, info)
}

// errorResponse is the JSON-RPC error response to the request id.
func errorResponse(id []byte, rpcErr *jsonrpc.Error) [][]byte {
	e, _ := json.Marshal(rpcErr)
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":`...)
	b = append(b, e...)
	return [][]byte{append(b, '}')}
}

// progressMessage is a notifications/progress for token.
func progressMessage(token []byte, p sb.Progress) []byte {
	params, _ := json.Marshal(struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total,omitempty"`
		Message  string  `json:"message,omitempty"`
	}{p.Progress, p.Total, p.Message})
	b := append([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`), token...)
	b = append(b, ',')
	b = append(b, params[1:]...)
	return append(b, '}')
}

// sseWriter writes server-sent events of the message type, as the go-sdk
// does, flushing each. The stream starts with the first event.
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
}

// start sends the stream's headers, once; s.mu is held or not needed.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one event whose data is the pieces of data.
func (s *sseWriter) event(data ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start()
	n := len("event: message\ndata: \n\n")
	for _, p := range data {
		n += len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, "event: message\ndata: "...)
	for _, p := range data {
		b = append(b, p...)
	}
	b = append(b, "\n\n"...)
	if _, err := s.w.Write(b); err == nil {
		_ = http.NewResponseController(s.w).Flush()
	}
}

// cancel cancels the relayed call of s that a client's
// notifications/cancelled names, if there is one, and reports whether
// there was (if not, the go-sdk's server may have it).
func (s *session) cancel(requestID []byte, w http.ResponseWriter) bool {
	s.mu.Lock()
	cancel := s.calls[string(requestID)]
	s.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errCancelledByClient)
	w.WriteHeader(http.StatusAccepted)
	return true
}
