package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// The Tasks extension of the 2026-07-28 protocol (SEP-2663,
// io.modelcontextprotocol/tasks) is passed through to the upstreams that
// have it; the gateway hosts no task itself. A server that advertises the
// extension may answer a tools/call of a client that declares it with a
// task (resultType "task") instead of the tool's result, and the client
// then asks after the task with tasks/get, answers its requests for input
// with tasks/update and ends it with tasks/cancel. The go-sdk's server
// knows none of it (it answers tasks/* with method-not-found, and its
// CallToolResult has no task), so the gateway serves these requests at the
// HTTP layer, as the stateless relay serves a plain call
// (relay_stateless.go), before the go-sdk sees them:
//
//   - a stateless tools/call whose _meta declares the extension, of a tool
//     of a 2026-07-28 server that advertises it, goes through relayCall
//     (the executor, its timeouts and metrics) with the client's
//     capabilities, and so the extension, in the upstream's _meta; a task
//     in its result reaches the client with its id namespaced. A plain
//     call is the stateless relay's already (relayCall namespaces its
//     task alike); this path takes the others that the relay leaves to
//     the go-sdk, whose CallToolResult cannot carry a task: a client that
//     can be asked for elicitation or sampling, a retry with its answers;
//   - tasks/get, tasks/update and tasks/cancel are refused with -32021
//     (MissingRequiredClientCapability) unless their _meta declares the
//     extension; else the namespaced id names the server, and the request
//     goes to it on its connection (upstream.Session.Request) with the
//     upstream's own id, and its answer comes back with the client's id.
//     On an endpoint none of whose servers has the extension they are the
//     go-sdk's (-32601, as from a server without it), unless they name a
//     task the gateway gave (its server gone since: a clear error).
//
// A namespaced id is SERVER.MAC.ID: the server's name (which has no '.'),
// a MAC of the principal, the server and the upstream's id under a key of
// the gateway's, and the upstream's id. The gateway keeps no table: an id
// is checked by its MAC, so that one principal cannot reach another's
// task, nor a made-up id any task, and an id is refused as unknown
// (-32602, as the SEP says of an id the server does not know) on an
// endpoint that does not show its server. The key is Options.TaskKey
// (serve derives it from the OAuth key file, which every replica has a
// copy of, so that replicas and a restarted daemon accept each other's
// ids), else made at start.
//
// A client's notifications/cancelled cancels no task (the SEP says it
// MUST NOT): it goes, as every notification of a stateless client, to the
// go-sdk, which has nothing to cancel once the call has been answered.
// Tasks of the 2025-11-25 protocol (tasks/result, tasks/list, the task
// param of tools/call) are not passed through, and a session of that
// protocol is not told of the extension.

// tasksExtension is the extension's key in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskMACBytes is how much of the HMAC-SHA256 a namespaced id carries.
const taskMACBytes = 16

// newTaskKey returns a key for the MACs of namespaced task ids.
func newTaskKey() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return key
}

// taskMAC is the MAC of a task id for principal and server.
func (g *Gateway) taskMAC(principal, server, id string) string {
	h := hmac.New(sha256.New, g.taskKey)
	h.Write([]byte(principal))
	h.Write([]byte{0})
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:taskMACBytes])
}

// clientTaskID is the id by which principal knows server's task id.
func (g *Gateway) clientTaskID(principal, server, id string) string {
	return server + "." + g.taskMAC(principal, server, id) + "." + id
}

// openTaskID returns the server and upstream id that id, a namespaced id
// of principal's, stands for; ok is false if it is not one.
func (g *Gateway) openTaskID(principal, id string) (server, upstreamID string, ok bool) {
	server, rest, ok1 := strings.Cut(id, ".")
	mac, upstreamID, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !sb.IsName(server) {
		return "", "", false
	}
	want := g.taskMAC(principal, server, upstreamID)
	return server, upstreamID, hmac.Equal([]byte(mac), []byte(want))
}

// tasksUpstream reports whether server is a connected 2026-07-28 server
// that advertises the extension.
func (g *Gateway) tasksUpstream(server string) bool {
	s, ok := g.src.Session(server)
	if !ok || s == nil || s.Status() != sb.StatusConnected {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // connected: Client need not wait
	cs, err := s.Client(ctx)
	if err != nil || olderThan2026(cs) {
		return false
	}
	c := cs.InitializeResult().Capabilities
	if c == nil {
		return false
	}
	_, ok = c.Extensions[tasksExtension]
	return ok
}

// showsServer reports whether the mirror shows something of server.
func (m *mirror) showsServer(server string) bool {
	if m.only != "" {
		return server == m.only
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.shown[server]
	return ok
}

// offersTasks reports whether a server the mirror shows passes tasks.
func (m *mirror) offersTasks() bool {
	if m.only != "" {
		return m.g.tasksUpstream(m.only)
	}
	m.mu.Lock()
	servers := slices.Collect(maps.Keys(m.shown)) // tasksUpstream must not run under m.mu
	m.mu.Unlock()
	for _, name := range servers {
		if m.g.tasksUpstream(name) {
			return true
		}
	}
	return false
}

// withTasks returns caps with the extension added (caps is not changed:
// it may be the go-sdk server's own).
func withTasks(caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	c := *caps
	c.Extensions = maps.Clone(caps.Extensions)
	if c.Extensions == nil {
		c.Extensions = make(map[string]any)
	}
	c.Extensions[tasksExtension] = map[string]any{}
	return &c
}

// taskRequest is what the gateway reads of a stateless request it may
// serve as a task's.
type taskRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// taskParams are the params of tools/call and tasks/* that the gateway
// reads.
type taskParams struct {
	TaskID         *string                    `json:"taskId"`
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses json.RawMessage            `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

// declaresTasks reports whether the client capabilities in meta declare
// the extension.
func declaresTasks(meta map[string]json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[metaCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// serveTasks serves r, a stateless POST to m, if it is a task's (see
// above), and reports whether it did; if not, r's body is restored for
// the go-sdk. It is asked after the stateless relay, which serves a plain
// call (a task's too) without it: what is left of tools/call is the
// go-sdk's path, which reads the body anyway.
func (g *Gateway) serveTasks(w http.ResponseWriter, r *http.Request, m *mirror) bool {
	method := r.Header.Get("Mcp-Method")
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tools/call":
	default:
		return false
	}
	accept := r.Header.Get("Accept")
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(accept, "text/event-stream") || !strings.Contains(accept, "application/json") {
		return false
	}
	body, err := readBody(r)
	r.Body = &rereadBody{read: body, rest: r.Body}
	if err != nil || len(body) > relayMaxBody || !rawjson.Contains(body, []byte(tasksExtension)) && method == "tools/call" {
		return false
	}
	var req taskRequest
	var p taskParams
	if json.Unmarshal(body, &req) != nil || req.JSONRPC != "2.0" || req.Method != method || !scalarID(req.ID) ||
		json.Unmarshal(req.Params, &p) != nil {
		return false // the go-sdk's to answer
	}
	if v, _ := rawjson.String(p.Meta[metaVersion]); v != r.Header.Get("Mcp-Protocol-Version") {
		return false
	}
	if method == "tools/call" {
		return g.serveTaskCall(w, r, m, &req, &p)
	}
	if !g.givenTask(r, &p) && !m.offersTasks() {
		return false // an endpoint without tasks: method-not-found, as before
	}
	g.serveTaskMethod(w, r, m, &req, &p)
	return true
}

// givenTask reports whether p names a task id the gateway gave r's
// principal, of a server that may since have gone.
func (g *Gateway) givenTask(r *http.Request, p *taskParams) bool {
	if p.TaskID == nil || !declaresTasks(p.Meta) {
		return false
	}
	_, _, ok := g.openTaskID(principalName(r), *p.TaskID)
	return ok
}

// serveTaskCall serves a tools/call that declares the extension, if its
// tool is of a server that passes tasks.
func (g *Gateway) serveTaskCall(w http.ResponseWriter, r *http.Request, m *mirror, req *taskRequest, p *taskParams) bool {
	if !declaresTasks(p.Meta) || r.Header.Get("Mcp-Name") != p.Name {
		return false
	}
	o, tool, shown := m.relayTool(p.Name)
	if !shown || !m.allows(sb.KindTool, o.server, o.name) || paramHeaders(tool.InputSchema) || !g.tasksUpstream(o.server) {
		return false
	}
	env := relayEnvelope{id: req.ID, method: []byte(`"tools/call"`), params: req.Params, name: p.Name,
		version: p.Meta[metaVersion], caps: p.Meta[metaCapabilities], info: p.Meta[metaClientInfo],
		responses: p.InputResponses, state: p.RequestState}
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" {
		env.args = a
	}
	if tok := p.Meta["progressToken"]; scalarID(tok) {
		env.token = tok
	}
	g.served.Add(1)
	g.relayCall(w, m.auditedRequest(r), nil, env, o, m.info)
	return true
}

// taskResult returns the result of server's tools/call for the client of
// r: a task's with its id namespaced; any other as it is. A task whose id
// is not a string (the SEP says it is) is an error: the client could
// never ask after it.
func (g *Gateway) taskResult(r *http.Request, server string, raw json.RawMessage) (json.RawMessage, error) {
	if !rawjson.Contains(raw, []byte(`"task"`)) {
		return raw, nil
	}
	if rt, _ := rawjson.Get(raw, "resultType"); string(rt) != `"task"` {
		return raw, nil
	}
	out, err := renameTask(raw, func(id string) string { return g.clientTaskID(principalName(r), server, id) })
	if err != nil {
		return nil, sb.NewError(sb.CodeServerError, fmt.Sprintf("server %q answered the call with a task that cannot be asked after: %v", server, err))
	}
	return out, nil
}

// renameTask returns the result raw with its taskId replaced by rename's.
func renameTask(raw json.RawMessage, rename func(string) string) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, err
	}
	var id string
	if err := json.Unmarshal(members["taskId"], &id); err != nil {
		return nil, fmt.Errorf("taskId: %w", err)
	}
	members["taskId"], _ = json.Marshal(rename(id)) // a string: never fails
	return json.Marshal(members)
}

// serveTaskMethod serves tasks/get, tasks/update or tasks/cancel. Each
// has a span of its own (the go-sdk's server, whose middleware traces the
// other requests, never sees it), and tasks/update and tasks/cancel, which
// change a task, an entry in the audit log (tasks/get reads, as a GET of
// the API does, and is not recorded: a client polls it).
func (g *Gateway) serveTaskMethod(w http.ResponseWriter, r *http.Request, m *mirror, req *taskRequest, p *taskParams) {
	r = m.auditedRequest(r)
	ctx, span := g.taskSpan(r, req.Method, p)
	var start time.Time
	if l := g.opts.Audit; l != nil {
		start = l.Now()
	}
	t := g.taskMethod(r.WithContext(ctx), m, req.Method, req.Params, p)
	if t.server != "" {
		span.SetAttributes(attribute.String("switchboard.server", t.server))
	}
	endSpan(span, string(t.outcome), t.err())
	if req.Method != "tasks/get" && g.opts.Audit != nil {
		name := req.Method
		if t.upstreamID != "" {
			name += " " + t.upstreamID
		}
		l := g.opts.Audit
		l.Record(r.Context(), sb.AuditEntry{Time: start, Kind: sb.AuditTask, Server: t.server, Name: name,
			Outcome: string(t.outcome), Duration: l.Now().Sub(start), ResultBytes: int64(len(t.result))}, p.InputResponses)
	}
	var msg [][]byte
	if t.rpcErr != nil {
		msg = errorResponse(req.ID, t.rpcErr)
	} else {
		msg = resultResponse(req.ID, t.result, m.info)
	}
	n := 0
	for _, b := range msg {
		n += len(b)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	if status := statelessErrorStatus(t.rpcErr); status != http.StatusOK {
		w.WriteHeader(status)
	}
	for _, b := range msg {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// taskAnswer is what a task's request came to: the result for the client
// or its error, what the audit log and the span record of it (outcome: ok
// or a code), and the task's server and upstream id once they are known.
type taskAnswer struct {
	result             json.RawMessage
	rpcErr             *jsonrpc.Error
	outcome            sb.Code
	server, upstreamID string
}

// err is t's error, nil if it succeeded.
func (t *taskAnswer) err() error {
	if t.rpcErr == nil {
		return nil
	}
	return t.rpcErr
}

// fail is t failing with code and the JSON-RPC error rpc.
func (t *taskAnswer) fail(code sb.Code, rpc *jsonrpc.Error) taskAnswer {
	t.outcome, t.rpcErr = code, rpc
	return *t
}

// taskMethod sends a task's request to the server that holds the task,
// and returns its result for the client.
func (g *Gateway) taskMethod(r *http.Request, m *mirror, method string, params json.RawMessage, p *taskParams) taskAnswer {
	var t taskAnswer
	if !declaresTasks(p.Meta) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
		return t.fail(sb.CodeBadRequest, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
			Message: method + " needs the client capability " + tasksExtension + ": declare it in _meta." + metaCapabilities + ".extensions"})
	}
	if p.TaskID == nil {
		return t.fail(sb.CodeBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params.taskId is missing"})
	}
	id := *p.TaskID
	if name := r.Header.Get("Mcp-Name"); name != "" && name != id {
		return t.fail(sb.CodeBadRequest, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("the Mcp-Name header %q is not the taskId %q", name, id)})
	}
	principal := principalName(r)
	server, upstreamID, ok := g.openTaskID(principal, id)
	if !ok || !m.showsServer(server) {
		return t.fail(sb.CodeNotFound, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q: not a task id this endpoint gave", id)})
	}
	t.server, t.upstreamID = server, upstreamID
	s, ok := g.src.Session(server)
	if !ok || s == nil {
		return t.fail(sb.CodeUnknownServer, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q: its server %q is no longer configured", id, server)})
	}
	if st := s.Status(); st != sb.StatusConnected {
		return t.fail(sb.CodeUnavailable, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("task %q: its server %q is not connected (%s); ask again once it is", id, server, st)})
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil {
		return t.fail(sb.CodeBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": " + err.Error()})
	}
	members["taskId"], _ = json.Marshal(upstreamID) // a string: never fails
	// Bounded as the mirror's other requests to a server are: a link that
	// died unnoticed is waited for only so long.
	ctx, cancel := context.WithTimeout(r.Context(), s.Config().CallTimeout())
	defer cancel()
	ctx, span := taskUpstreamSpan(ctx, method, server, upstreamID, members)
	up, _ := json.Marshal(members) // decoded JSON: never fails
	raw, err := s.Request(ctx, method, up, upstreamID)
	if err != nil {
		if rpcErr, ok := err.(*jsonrpc.Error); ok {
			endSpan(span, string(sb.CodeServerError), err)
			return t.fail(sb.CodeServerError, rpcErr) // the server's own answer (an unknown task: -32602)
		}
		endSpan(span, string(sb.CodeOf(err)), err)
		return t.fail(sb.CodeOf(err), &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q: %s of server %q: %v", id, method, server, err)})
	}
	endSpan(span, "ok", nil)
	t.outcome = "ok"
	if _, ok := rawjson.Get(raw, "taskId"); !ok {
		t.result = raw // an ack
		return t
	}
	out, err := renameTask(raw, func(string) string { return id })
	if err != nil {
		return t.fail(sb.CodeServerError, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q: the result of server %q: %v", id, server, err)})
	}
	t.result = out
	return t
}
