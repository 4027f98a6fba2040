package testserver

// With -tasks the server is not the go-sdk's (v1.8.0 has no tasks) but a
// raw JSON-RPC server of the 2026-07-28 protocol with the Tasks extension
// (SEP-2663, io.modelcontextprotocol/tasks), on stdio (a message a line)
// or over Streamable HTTP (POST /mcp, answered with one JSON body; no
// sessions, as the protocol has none; an Mcp-Method or Mcp-Name header
// that is not what the body says is refused with -32020). It answers server/discover with the
// extension advertised, tools/list, tools/call, and tasks/get, tasks/update
// and tasks/cancel on tasks it keeps in memory; every other request is
// method-not-found. Its tools are those the conformance suite's tasks
// scenarios ask for, plus a countdown that tests drive without a clock:
//
//   - greet (sync): "Hello, NAME!";
//   - slow_compute (task): completes after polls tasks/get (argument
//     polls) or seconds of time (argument seconds), whichever is set;
//     a call with neither completes at once, as a plain result;
//   - confirm_delete (task): asks for a confirmation (elicitation/create)
//     through tasks/get, and completes with the answer tasks/update brings;
//   - multi_input (task): asks two questions at once;
//   - failing_job (task): completes with a tool error (isError);
//   - protocol_error_job (task): fails with a JSON-RPC error;
//   - test_tool_with_task (task): asks for user_name the stateless way
//     first (a result of resultType input_required, requestState
//     "mrtr-1"), and the retry with the answer makes a completed task
//     that greets the name (SEP-2663's composition with SEP-2322).
//
// A task is made only for a request whose _meta declares the extension
// (io.modelcontextprotocol/clientCapabilities.extensions); without it a
// task tool runs to its end in the call (slow_compute), or is refused
// with -32021 (the others), and tasks/* are refused with -32021. Task ids
// are task-1, task-2, ... in every process, so that two servers' ids
// collide. notifications/cancelled cancels no task (the SEP says it MUST
// NOT): only tasks/cancel does.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tasksExtension is the extension's key in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// Errors of the 2026-07-28 protocol that the tasks server sends.
const (
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeMissingCapability  = -32021
	tasksProtocolVersion   = "2026-07-28"
	taskTTLMs              = 600000
	taskPollIntervalMs     = 50
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// tasksServer is the -tasks server's state.
type tasksServer struct {
	s *server

	mu    sync.Mutex
	next  int
	tasks map[string]*task
}

// task is one task the server keeps.
type task struct {
	id               string
	status           string // working, input_required, completed, failed, cancelled
	created, updated time.Time
	pollsLeft        int       // slow_compute: tasks/get until it completes
	deadline         time.Time // slow_compute: when it completes, if set
	result           json.RawMessage
	err              json.RawMessage
	asks             map[string]json.RawMessage // pending input requests by id
	answers          map[string]json.RawMessage
	finish           func(t *task) // called once every ask is answered
}

// rpcMessage is a JSON-RPC message the tasks server reads.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// runTasks serves the -tasks server on the configured transport.
func (s *server) runTasks(stdin io.Reader) (code int, reason string) {
	ts := &tasksServer{s: s, tasks: make(map[string]*task)}
	if s.opts.Transport == "http" {
		return ts.runHTTP()
	}
	out := bufio.NewWriter(s.stdout)
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if answer := ts.handle(sc.Bytes()); answer != nil {
			out.Write(answer)
			out.WriteByte('\n')
			out.Flush()
		}
	}
	return 0, "stdin closed"
}

func (ts *tasksServer) runHTTP() (code int, reason string) {
	ln, err := net.Listen("tcp", ts.s.opts.Listen)
	if err != nil {
		ts.s.logf("listen: %v", err)
		return 1, "listen failed"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, "reading the body", http.StatusBadRequest)
			return
		}
		if mismatch := headerMismatch(r.Header, body); mismatch != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(mismatch)
			return
		}
		answer := ts.handle(body)
		if answer == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(ts.s.stdout, "LISTEN http://%s\n", ln.Addr())
	select {
	case <-ts.s.ctx.Done():
	case err := <-served:
		ts.s.logf("serve: %v", err)
		return 1, "serve failed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	return 0, "signal"
}

// headerMismatch returns the -32020 (HeaderMismatch) response to a POST
// whose Mcp-Method or Mcp-Name header (if set) is not what its body says
// (SEP-2243; SEP-2663 names the taskId in Mcp-Name), nil if they agree.
func headerMismatch(h http.Header, body []byte) []byte {
	var m struct {
		rpcMessage
		Params struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	name := m.Params.Name
	if strings.HasPrefix(m.Method, "tasks/") {
		name = m.Params.TaskID
	}
	method, hname := h.Get("Mcp-Method"), h.Get("Mcp-Name")
	if method != "" && method != m.Method || hname != "" && hname != name {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
			"error": rpcError{Code: -32020, Message: "the Mcp-Method or Mcp-Name header is not what the body says"}})
		return b
	}
	return nil
}

// handle answers one message: the response to a request, nil for a
// notification (or anything without an id).
func (ts *tasksServer) handle(line []byte) []byte {
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil || m.Method == "" {
		return nil
	}
	if len(m.ID) == 0 {
		if m.Method == "notifications/cancelled" {
			ts.s.logf("notification %s", m.Method)
		}
		return nil
	}
	ts.s.logf("request %s", m.Method)
	result, rerr := ts.serve(m.Method, m.Params)
	msg := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	return b
}

// params is what the tasks server reads of a request's params.
type params struct {
	Name           string                     `json:"name"`
	Arguments      map[string]any             `json:"arguments"`
	TaskID         *string                    `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

// declares reports whether the request's client declared the extension.
func (p *params) declares() bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(p.Meta[metaClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

func missingCapability(what string) *rpcError {
	return &rpcError{Code: codeMissingCapability, Message: what + " needs the client capability " + tasksExtension,
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}}
}

func (ts *tasksServer) serve(method string, raw json.RawMessage) (map[string]any, *rpcError) {
	var p params
	if len(raw) > 0 && json.Unmarshal(raw, &p) != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "params is not an object"}
	}
	switch method {
	case "server/discover":
		return complete(map[string]any{
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": ts.s.opts.Name, "version": ts.s.opts.Version}},
			"supportedVersions": []string{tasksProtocolVersion},
			"capabilities": map[string]any{
				"tools":      map[string]any{},
				"extensions": map[string]any{tasksExtension: map[string]any{}},
			},
			"ttlMs": 0, "cacheScope": "public",
		}), nil
	case "tools/list":
		return complete(map[string]any{"tools": tasksTools, "ttlMs": 0, "cacheScope": "public"}), nil
	case "tools/call":
		return ts.call(&p)
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !p.declares() {
			return nil, missingCapability(method)
		}
		if p.TaskID == nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: method + ": params.taskId is missing"}
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[*p.TaskID]
		if t == nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("unknown task %q", *p.TaskID)}
		}
		switch method {
		case "tasks/get":
			t.poll()
			res := complete(t.detailed())
			if tp, ok := p.Meta["traceparent"]; ok {
				// The trace context it was sent, for tests of a gateway's
				// spans to see that the trace reached the server.
				res["_meta"] = map[string]any{"traceparent": tp}
			}
			return res, nil
		case "tasks/update":
			t.update(p.InputResponses)
		case "tasks/cancel":
			if !t.terminal() {
				t.set("cancelled")
			}
		}
		return complete(nil), nil
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "method not found: " + method}
}

// complete returns result with resultType complete.
func complete(result map[string]any) map[string]any {
	if result == nil {
		result = map[string]any{}
	}
	result["resultType"] = "complete"
	return result
}

func taskText(text string, isError bool) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError})
	return b
}

// call serves tools/call.
func (ts *tasksServer) call(p *params) (map[string]any, *rpcError) {
	num := func(k string) int {
		f, _ := p.Arguments[k].(float64)
		return int(f)
	}
	str := func(k string) string {
		v, _ := p.Arguments[k].(string)
		return v
	}
	if p.Name == "greet" {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "Hello, " + str("name") + "!"}}})
		var res map[string]any
		_ = json.Unmarshal(b, &res)
		return complete(res), nil
	}
	t := &task{}
	switch p.Name {
	case "slow_compute":
		polls, secs := num("polls"), num("seconds")
		if polls == 0 && secs == 0 || !p.declares() {
			var res map[string]any
			_ = json.Unmarshal(taskText("computed "+str("label"), false), &res)
			return complete(res), nil
		}
		t.pollsLeft = polls
		if secs > 0 {
			t.deadline = time.Now().Add(time.Duration(secs) * time.Second)
		}
	case "confirm_delete":
		t.ask("confirm", "Delete "+str("filename")+"?")
		t.finish = func(t *task) {
			t.result = taskText("answer: "+string(t.answers["confirm"]), false)
			t.set("completed")
		}
	case "multi_input":
		t.ask("first", "First?")
		t.ask("second", "Second?")
		t.finish = func(t *task) {
			t.result = taskText("answers: "+string(t.answers["first"])+" "+string(t.answers["second"]), false)
			t.set("completed")
		}
	case "test_tool_with_task":
		answer, ok := p.InputResponses["user_name"]
		if !ok || p.RequestState != "mrtr-1" {
			t.ask("user_name", "Your name?")
			return map[string]any{"resultType": "input_required", "inputRequests": t.asks, "requestState": "mrtr-1"}, nil
		}
		var a struct {
			Content struct{ Name string } `json:"content"`
		}
		_ = json.Unmarshal(answer, &a)
		t.result = taskText("Hello, "+a.Content.Name+"!", false)
		t.status = "completed"
	case "failing_job":
		t.result = taskText("the job failed", true)
		t.status = "completed"
	case "protocol_error_job":
		t.err, _ = json.Marshal(rpcError{Code: -32603, Message: "the job broke"})
		t.status = "failed"
	default:
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown tool " + p.Name}
	}
	if !p.declares() {
		return nil, missingCapability("tool " + p.Name)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.next++
	t.id = "task-" + strconv.Itoa(ts.next)
	if id, ok := p.Arguments["task_id"].(string); ok {
		t.id = id // the caller's: a test of a server's odd ids
	}
	t.created = time.Now().UTC()
	t.updated = t.created
	if t.status == "" {
		t.status = "working"
		if len(t.asks) > 0 {
			t.status = "input_required"
		}
	}
	ts.tasks[t.id] = t
	res := t.base()
	res["resultType"] = "task"
	if n, ok := p.Arguments["numeric_task_id"].(float64); ok {
		res["taskId"] = n // against the SEP: a test of a server that breaks it
	}
	return res, nil
}

// ask adds an elicitation the task waits for.
func (t *task) ask(id, message string) {
	if t.asks == nil {
		t.asks = make(map[string]json.RawMessage)
		t.answers = make(map[string]json.RawMessage)
	}
	t.asks[id], _ = json.Marshal(map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
	}})
}

func (t *task) terminal() bool {
	return t.status == "completed" || t.status == "failed" || t.status == "cancelled"
}

func (t *task) set(status string) {
	t.status = status
	t.updated = time.Now().UTC()
}

// poll counts a tasks/get of a working slow_compute.
func (t *task) poll() {
	if t.status != "working" {
		return
	}
	if t.pollsLeft > 0 {
		t.pollsLeft--
	}
	if t.pollsLeft == 0 && (t.deadline.IsZero() || !time.Now().Before(t.deadline)) {
		t.result = taskText("computed", false)
		t.set("completed")
	}
}

// update takes the answers of tasks/update; answers to no pending request
// are ignored.
func (t *task) update(answers map[string]json.RawMessage) {
	if t.status != "input_required" {
		return
	}
	for id, a := range answers {
		if _, ok := t.asks[id]; ok {
			delete(t.asks, id)
			t.answers[id] = a
		}
	}
	if len(t.asks) == 0 {
		t.finish(t)
	}
}

// base is the Task object: its id, status and times.
func (t *task) base() map[string]any {
	return map[string]any{
		"taskId":         t.id,
		"status":         t.status,
		"createdAt":      t.created.Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.updated.Format(time.RFC3339Nano),
		"ttlMs":          taskTTLMs,
		"pollIntervalMs": taskPollIntervalMs,
	}
}

// detailed is the DetailedTask of tasks/get: the task, and its result,
// error or pending input requests.
func (t *task) detailed() map[string]any {
	d := t.base()
	switch {
	case t.status == "completed":
		d["result"] = t.result
	case t.status == "failed":
		d["error"] = t.err
	case t.status == "input_required":
		d["inputRequests"] = t.asks
	}
	return d
}

// tasksTools is the -tasks server's tools/list.
var tasksTools = func() []any {
	tool := func(name, desc string, props map[string]any, support string) map[string]any {
		t := map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object", "properties": props}}
		if support != "" {
			t["execution"] = map[string]any{"taskSupport": support}
		}
		return t
	}
	str := map[string]any{"type": "string"}
	num := map[string]any{"type": "integer"}
	return []any{
		tool("greet", "Says hello to name.", map[string]any{"name": str}, ""),
		tool("slow_compute", "A task that completes after polls tasks/get or seconds of time; task_id chooses its id, numeric_task_id answers with a number for it.", map[string]any{"polls": num, "seconds": num, "label": str, "task_id": str, "numeric_task_id": num}, "optional"),
		tool("confirm_delete", "A task that asks to confirm the deletion of filename.", map[string]any{"filename": str}, "required"),
		tool("multi_input", "A task that asks two questions at once.", map[string]any{}, "required"),
		tool("failing_job", "A task that completes with a tool error.", map[string]any{}, "required"),
		tool("protocol_error_job", "A task that fails with a JSON-RPC error.", map[string]any{}, "required"),
		tool("test_tool_with_task", "Asks for user_name, then makes a task that greets it.", map[string]any{}, "required"),
	}
}()

// tasksFlags are the flags the -tasks server reads; any other is refused
// with it, so that a test does not believe it tests a fault it does not.
var tasksFlags = strings.Fields("tasks name server-version transport listen pid-file")
