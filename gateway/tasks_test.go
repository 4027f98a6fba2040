package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// tasksCaps are the client capabilities of a client that declares the
// Tasks extension; askingTasksCaps those of one that can be asked for
// elicitation too (whose calls the plain relay leaves to the go-sdk).
const (
	tasksCaps       = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	askingTasksCaps = `{"elicitation":{},"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
)

// tasksEnv serves two tasks servers (testserver -tasks), alpha over stdio
// and beta over Streamable HTTP, whose task ids are the same (task-1,
// task-2, ...), and plain, a 2025-11-25 server without tasks; alice and
// bob are two principals' tokens.
type tasksEnv struct {
	*toolsetEnv
	beta       *testserver.Process
	alice, bob string
}

func newTasksEnv(t *testing.T) *tasksEnv {
	t.Helper()
	return newTasksEnvWith(t, gateway.Options{})
}

// newTasksEnvWith is newTasksEnv with the gateway options opts. The
// stdio servers run sandboxed, as serve runs them.
func newTasksEnvWith(t *testing.T, opts gateway.Options) *tasksEnv {
	t.Helper()
	beta := testserver.StartHTTP(t, "-tasks", "-name", "beta")
	boxed := func(cfg *sb.ServerConfig) *sb.ServerConfig {
		cfg.Sandbox = &sb.SandboxConfig{Enabled: new(true)}
		return cfg
	}
	e := newToolsetEnvOn(t, sqlitetest.Store(t,
		boxed(&sb.ServerConfig{Name: "alpha", Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: []string{"-tasks", "-name", "alpha"}, ProtocolVersion: "2026-07-28"}),
		&sb.ServerConfig{Name: "beta", Transport: sb.TransportStreamableHTTP, URL: beta.URL, ProtocolVersion: "2026-07-28"},
		boxed(stdio(t, "plain"))), upstream.Options{Sandbox: sandboxtest.Runtime(t)}, opts)
	te := &tasksEnv{toolsetEnv: e, beta: beta, alice: e.createToken("alice", sb.ScopeMCP), bob: e.createToken("bob", sb.ScopeMCP)}
	cs, err := e.connectAs("/mcp", te.alice, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "alpha__slow_compute", "beta__slow_compute", "plain__echo")
	return te
}

// do sends a stateless 2026-07-28 request as the principal of tok.
func (e *tasksEnv) do(tok, path, method, name, params, caps string) statelessAnswer {
	e.t.Helper()
	r := newRequest(e.t, e.url+path, method, name, params, caps)
	r.Header.Set("Authorization", "Bearer "+tok)
	return send(e.t, r)
}

// detailedTask is a task as tools/call and tasks/get give it.
type detailedTask struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	CreatedAt     string                     `json:"createdAt"`
	TTLMs         int                        `json:"ttlMs"`
	Result        json.RawMessage            `json:"result"`
	Error         json.RawMessage            `json:"error"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

// call calls tool on path with the extension declared and returns the
// task it makes.
func (e *tasksEnv) call(tok, path, tool, args, caps string) detailedTask {
	e.t.Helper()
	a := e.do(tok, path, "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+`}`, caps)
	var task detailedTask
	if err := json.Unmarshal([]byte(a.result), &task); err != nil || a.status != http.StatusOK || task.ResultType != "task" || task.TaskID == "" || task.CreatedAt == "" {
		e.t.Fatalf("%s %s: HTTP %d, result %s, error %s; want a task", path, tool, a.status, a.result, a.err)
	}
	return task
}

// task sends method (tasks/get, tasks/update, tasks/cancel) for id.
func (e *tasksEnv) task(tok, path, method, id, extra string) statelessAnswer {
	e.t.Helper()
	idJSON, _ := json.Marshal(id)
	return e.do(tok, path, method, id, `{"taskId":`+string(idJSON)+extra+`}`, tasksCaps)
}

// get is tasks/get of id, which must succeed.
func (e *tasksEnv) get(tok, path, id string) detailedTask {
	e.t.Helper()
	a := e.task(tok, path, "tasks/get", id, "")
	var task detailedTask
	if err := json.Unmarshal([]byte(a.result), &task); err != nil || a.status != http.StatusOK || task.ResultType != "complete" || task.TaskID != id {
		e.t.Fatalf("tasks/get %s on %s: HTTP %d, result %s, error %s; want the task", id, path, a.status, a.result, a.err)
	}
	return task
}

// ack checks that a is the empty ack of tasks/update and tasks/cancel.
func ack(t *testing.T, what string, a statelessAnswer) {
	t.Helper()
	var res map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.result), &res); err != nil || a.status != http.StatusOK || string(res["resultType"]) != `"complete"` || res["taskId"] != nil || res["status"] != nil {
		t.Errorf("%s: HTTP %d, result %s, error %s; want the empty ack", what, a.status, a.result, a.err)
	}
}

// A task of a stdio and of a Streamable HTTP server, on its per-server
// endpoint and on the aggregate, from a client that can be asked for
// elicitation or not, goes its whole way through the gateway: the call
// makes it (with a namespaced id), tasks/get shows its request for
// input, tasks/update answers it, and tasks/get then has the result; a
// countdown task completes after its polls, and tasks/cancel cancels one.
func TestTasksPassThroughTheirWholeLifecycle(t *testing.T) {
	e := newTasksEnv(t)
	for _, server := range []string{"alpha", "beta"} {
		for _, path := range []string{"/mcp/" + server, "/mcp"} {
			tool := func(name string) string {
				if path == "/mcp" {
					return server + "__" + name
				}
				return name
			}
			for _, caps := range []string{tasksCaps, askingTasksCaps} {
				task := e.call(e.alice, path, tool("confirm_delete"), `{"filename":"a.txt"}`, caps)
				if !strings.HasPrefix(task.TaskID, server+".") || task.Status != "input_required" || task.TTLMs == 0 {
					t.Errorf("%s %s: task %+v; want one of %s's ids, input_required, with its ttl", path, caps, task, server)
				}
				got := e.get(e.alice, path, task.TaskID)
				if got.Status != "input_required" || !strings.Contains(string(got.InputRequests["confirm"]), `"elicitation/create"`) {
					t.Errorf("%s: tasks/get %+v; want its request for input", path, got)
				}
				ack(t, "tasks/update", e.task(e.alice, path, "tasks/update", task.TaskID, `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`))
				got = e.get(e.alice, path, task.TaskID)
				if got.Status != "completed" || !strings.Contains(string(got.Result), `\"confirm\":true`) {
					t.Errorf("%s: tasks/get after the answer %+v; want completed with the answer", path, got)
				}
			}

			task := e.call(e.alice, path, tool("slow_compute"), `{"polls":2}`, tasksCaps)
			if got := e.get(e.alice, path, task.TaskID); got.Status != "working" || got.Result != nil {
				t.Errorf("%s: first poll %+v; want working, no result", path, got)
			}
			if got := e.get(e.alice, path, task.TaskID); got.Status != "completed" || !strings.Contains(string(got.Result), "computed") {
				t.Errorf("%s: second poll %+v; want completed", path, got)
			}

			task = e.call(e.alice, path, tool("slow_compute"), `{"polls":100}`, tasksCaps)
			ack(t, "tasks/cancel", e.task(e.alice, path, "tasks/cancel", task.TaskID, ""))
			if got := e.get(e.alice, path, task.TaskID); got.Status != "cancelled" {
				t.Errorf("%s: after tasks/cancel %+v; want cancelled", path, got)
			}
			ack(t, "tasks/cancel of a cancelled task", e.task(e.alice, path, "tasks/cancel", task.TaskID, ""))

			task = e.call(e.alice, path, tool("protocol_error_job"), `{}`, tasksCaps)
			if got := e.get(e.alice, path, task.TaskID); got.Status != "failed" || !strings.Contains(string(got.Error), "-32603") {
				t.Errorf("%s: failed task %+v; want its error", path, got)
			}
		}
	}
}

// Two servers' tasks of the same upstream id have two ids on the
// aggregate, each of which reaches its own server's task only: cancelling
// one leaves the other; on the other server's endpoint an id is unknown
// (-32602), as are a made-up id and another principal's.
func TestTaskIDsAreNamespacedPerServerAndPrincipal(t *testing.T) {
	e := newTasksEnv(t)
	a := e.call(e.alice, "/mcp", "alpha__slow_compute", `{"polls":100}`, tasksCaps)
	b := e.call(e.alice, "/mcp", "beta__slow_compute", `{"polls":100}`, tasksCaps)
	if a.TaskID == b.TaskID || !strings.HasSuffix(a.TaskID, ".task-1") || !strings.HasSuffix(b.TaskID, ".task-1") {
		t.Fatalf("ids %q and %q; want two ids of the two servers' task-1", a.TaskID, b.TaskID)
	}
	ack(t, "tasks/cancel", e.task(e.alice, "/mcp", "tasks/cancel", a.TaskID, ""))
	if got := e.get(e.alice, "/mcp", a.TaskID); got.Status != "cancelled" {
		t.Errorf("alpha's task %+v; want cancelled", got)
	}
	if got := e.get(e.alice, "/mcp", b.TaskID); got.Status != "working" {
		t.Errorf("beta's task %+v; want still working", got)
	}
	if got := e.get(e.alice, "/mcp/beta", b.TaskID); got.Status != "working" {
		t.Errorf("beta's task on /mcp/beta %+v; want still working", got)
	}

	server, rest, _ := strings.Cut(a.TaskID, ".")
	mac, _, _ := strings.Cut(rest, ".")
	for _, c := range []struct{ what, tok, path, id string }{
		{"alpha's task on /mcp/beta", e.alice, "/mcp/beta", a.TaskID},
		{"alpha's task on /mcp/plain", e.alice, "/mcp/plain", a.TaskID},
		{"bob asking for alice's task", e.bob, "/mcp", b.TaskID},
		{"alice's MAC on another task", e.alice, "/mcp", server + "." + mac + ".task-2"},
		{"alice's MAC on the other server", e.alice, "/mcp", "beta." + mac + ".task-1"},
		{"an upstream's own id", e.alice, "/mcp/alpha", "task-1"},
		{"a made-up id", e.alice, "/mcp", "alpha.AAAAAAAAAAAAAAAAAAAAAA.task-1"},
	} {
		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			ans := e.task(c.tok, c.path, method, c.id, "")
			if ans.status != http.StatusBadRequest || !strings.Contains(ans.err, `"code":-32602`) || !strings.Contains(ans.err, "unknown task") {
				t.Errorf("%s, %s: HTTP %d, result %s, error %s; want -32602 unknown task", c.what, method, ans.status, ans.result, ans.err)
			}
		}
	}
	if got := e.get(e.alice, "/mcp", b.TaskID); got.Status != "working" {
		t.Errorf("beta's task after bob's cancel %+v; want still working", got)
	}
	// An endpoint without tasks answers as a server without them, unless
	// the id is one it gave.
	for _, c := range []struct{ what, caps string }{{"undeclared", plainCaps}, {"declared", tasksCaps}} {
		ans := e.do(e.alice, "/mcp/plain", "tasks/get", "plain.x.task-1", `{"taskId":"plain.x.task-1"}`, c.caps)
		if ans.status != http.StatusNotFound || !strings.Contains(ans.err, `"code":-32601`) {
			t.Errorf("/mcp/plain, %s: HTTP %d, result %s, error %s; want -32601", c.what, ans.status, ans.result, ans.err)
		}
	}
}

// Without the extension declared, tasks/* are refused with -32021 (HTTP
// 400) naming the capability, and a task tool runs as a plain call: the
// upstream was not told of the extension. The endpoints whose servers
// pass tasks advertise the extension in server/discover; one whose
// server does not, does not.
func TestTasksNeedTheExtensionDeclared(t *testing.T) {
	e := newTasksEnv(t)
	task := e.call(e.alice, "/mcp/alpha", "slow_compute", `{"polls":100}`, tasksCaps)
	for _, c := range []struct{ method, extra string }{
		{"tasks/get", ""}, {"tasks/update", `,"inputResponses":{}`}, {"tasks/cancel", ""},
	} {
		a := e.do(e.alice, "/mcp/alpha", c.method, task.TaskID, `{"taskId":"`+task.TaskID+`"`+c.extra+`}`, plainCaps)
		if a.status != http.StatusBadRequest || !strings.Contains(a.err, `"code":-32021`) || !strings.Contains(a.err, `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
			t.Errorf("%s without the extension: HTTP %d, result %s, error %s; want -32021", c.method, a.status, a.result, a.err)
		}
	}
	if got := e.get(e.alice, "/mcp/alpha", task.TaskID); got.Status != "working" {
		t.Errorf("the task after the refused cancel %+v; want working", got)
	}
	for _, caps := range []string{plainCaps, `{"elicitation":{}}`} {
		a := e.do(e.alice, "/mcp/beta", "tools/call", "slow_compute", `{"name":"slow_compute","arguments":{"polls":3,"label":"now"}}`, caps)
		if !strings.Contains(a.result, `"resultType":"complete"`) || !strings.Contains(a.result, "computed now") || strings.Contains(a.result, "taskId") {
			t.Errorf("caps %s: HTTP %d, result %s, error %s; want the plain result", caps, a.status, a.result, a.err)
		}
	}

	for path, want := range map[string]bool{"/mcp/alpha": true, "/mcp/beta": true, "/mcp": true, "/mcp/plain": false} {
		a := e.do(e.alice, path, "server/discover", "", `{}`, plainCaps)
		var res struct {
			Capabilities struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal([]byte(a.result), &res); err != nil {
			t.Fatalf("%s: discover HTTP %d, result %s, error %s", path, a.status, a.result, a.err)
		}
		if _, got := res.Capabilities.Extensions["io.modelcontextprotocol/tasks"]; got != want {
			t.Errorf("%s: discover %s; want the tasks extension advertised: %t", path, a.result, want)
		}
	}
}

// A client's notifications/cancelled for the call that made a task does
// not cancel the task (SEP-2663: it MUST NOT), which goes on to complete.
func TestCancelledNotificationDoesNotCancelATask(t *testing.T) {
	e := newTasksEnv(t)
	for _, path := range []string{"/mcp/alpha", "/mcp/beta"} {
		task := e.call(e.alice, path, "slow_compute", `{"polls":2}`, tasksCaps)
		n := newRequest(t, e.url+path, "notifications/cancelled", "", `{"requestId":1,"reason":"changed my mind"}`, tasksCaps)
		n.Header.Set("Authorization", "Bearer "+e.alice)
		body := strings.Replace(readBody(t, n), `"id":1,`, "", 1) // a notification has no id
		n.Body, n.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		if a := send(t, n); a.status >= 300 {
			t.Fatalf("%s: notifications/cancelled: HTTP %d %v", path, a.status, a.messages)
		}
		if got := e.get(e.alice, path, task.TaskID); got.Status != "working" {
			t.Errorf("%s: after notifications/cancelled %+v; want working", path, got)
		}
		if got := e.get(e.alice, path, task.TaskID); got.Status != "completed" {
			t.Errorf("%s: second poll %+v; want completed", path, got)
		}
	}
}

// A task whose server is gone is a clear error, at once: one that stopped
// answering (its process killed) and one no longer configured.
func TestTaskOfAGoneServerIsAClearError(t *testing.T) {
	e := newTasksEnv(t)
	b := e.call(e.alice, "/mcp", "beta__slow_compute", `{"polls":100}`, tasksCaps)
	a := e.call(e.alice, "/mcp", "alpha__slow_compute", `{"polls":100}`, tasksCaps)
	e.beta.Kill()
	if ans := e.task(e.alice, "/mcp", "tasks/get", b.TaskID, ""); !strings.Contains(ans.err, `"code":-32603`) || !strings.Contains(ans.err, `server \"beta\"`) {
		t.Errorf("beta killed: HTTP %d, result %s, error %s; want an error naming beta", ans.status, ans.result, ans.err)
	}
	if err := e.reg.Delete(t.Context(), "alpha", 0); err != nil {
		t.Fatal(err)
	}
	if ans := e.task(e.alice, "/mcp", "tasks/get", a.TaskID, ""); ans.err == "" || !strings.Contains(ans.err, "unknown task") && !strings.Contains(ans.err, "no longer configured") {
		t.Errorf("alpha deleted: HTTP %d, result %s, error %s; want an error", ans.status, ans.result, ans.err)
	}
}

// readBody returns the body of r, which is left unread.
func readBody(t *testing.T, r *http.Request) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A toolset's endpoint passes the tasks of the tools it selects, and
// advertises the extension for them.
func TestToolsetPassesTasksOfItsSelection(t *testing.T) {
	e := newTasksEnv(t)
	set := sb.Toolset{Name: "jobs", Tools: []sb.Selector{{Server: "alpha", Tool: "slow_compute", As: "compute"}}}
	if _, err := e.toolsets.Create(t.Context(), &set); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("jobs-bot", sb.ToolsetScope("jobs"))
	const path = "/toolsets/jobs/mcp"
	cs, err := e.connectAs(path, tok, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "compute")
	if a := e.do(tok, path, "server/discover", "", `{}`, plainCaps); !strings.Contains(a.result, `"io.modelcontextprotocol/tasks":{}`) {
		t.Errorf("discover: HTTP %d, result %s, error %s; want the tasks extension", a.status, a.result, a.err)
	}
	task := e.call(tok, path, "compute", `{"polls":1}`, tasksCaps)
	if got := e.get(tok, path, task.TaskID); got.Status != "completed" {
		t.Errorf("the toolset's task %+v; want completed", got)
	}
}

// A server that asks for input before it makes a task (SEP-2322's
// request for input, then SEP-2663's task on the retry) is passed through
// both rounds: the request for input reaches the client as it is, and the
// retry with its answers and the server's requestState reaches the server,
// whose task comes back namespaced and then completes with the answer.
func TestATaskAfterARequestForInput(t *testing.T) {
	e := newTasksEnv(t)
	for _, caps := range []string{tasksCaps, askingTasksCaps} {
		first := e.do(e.alice, "/mcp/beta", "tools/call", "test_tool_with_task", `{"name":"test_tool_with_task","arguments":{}}`, caps)
		var asked struct {
			ResultType    string                     `json:"resultType"`
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal([]byte(first.result), &asked); err != nil || asked.ResultType != "input_required" || asked.RequestState != "mrtr-1" || asked.InputRequests["user_name"] == nil {
			t.Fatalf("caps %s: HTTP %d, result %s, error %s; want the server's request for input", caps, first.status, first.result, first.err)
		}
		task := e.call(e.alice, "/mcp/beta", "test_tool_with_task",
			`{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"mrtr-1"`, caps)
		if !strings.HasPrefix(task.TaskID, "beta.") {
			t.Errorf("caps %s: task id %q; want beta's namespace", caps, task.TaskID)
		}
		if got := e.get(e.alice, "/mcp/beta", task.TaskID); got.Status != "completed" || !strings.Contains(string(got.Result), "Hello, Alice!") {
			t.Errorf("caps %s: the task %+v; want completed with the answer", caps, got)
		}
	}
}

// Gateways given one Options.TaskKey, replicas of one store, accept each
// other's task ids: a task made through one is got and cancelled through
// another; a gateway of another key refuses the id as unknown.
func TestTaskIDsHoldAcrossGatewaysOfOneKey(t *testing.T) {
	beta := testserver.StartHTTP(t, "-tasks", "-name", "beta")
	st := sqlitetest.Store(t, &sb.ServerConfig{Name: "beta", Transport: sb.TransportStreamableHTTP, URL: beta.URL, ProtocolVersion: "2026-07-28"})
	key := bytes.Repeat([]byte{7}, 32)
	first := newToolsetEnvOn(t, st, upstream.Options{}, gateway.Options{TaskKey: key})
	tok := first.createToken("alice", sb.ScopeMCP) // before the others load the tokens
	replica := newToolsetEnvOn(t, st, upstream.Options{}, gateway.Options{TaskKey: bytes.Clone(key)})
	other := newToolsetEnvOn(t, st, upstream.Options{}, gateway.Options{TaskKey: bytes.Repeat([]byte{8}, 32)})
	envs := map[string]*tasksEnv{}
	for name, e := range map[string]*toolsetEnv{"first": first, "replica": replica, "other": other} {
		cs, err := e.connectAs("/mcp/beta", tok, "2025-11-25")
		if err != nil {
			t.Fatal(err)
		}
		waitTools(t, cs, "slow_compute")
		envs[name] = &tasksEnv{toolsetEnv: e, beta: beta, alice: tok}
	}

	task := envs["first"].call(tok, "/mcp/beta", "slow_compute", `{"polls":5}`, tasksCaps)
	if got := envs["replica"].get(tok, "/mcp/beta", task.TaskID); got.Status != "working" {
		t.Errorf("tasks/get through the replica: %+v; want the task, working", got)
	}
	if a := envs["other"].task(tok, "/mcp/beta", "tasks/get", task.TaskID, ""); a.status == http.StatusOK || !strings.Contains(a.err, "unknown task") {
		t.Errorf("tasks/get through a gateway of another key: HTTP %d, result %s, error %s; want unknown task", a.status, a.result, a.err)
	}
	ack(t, "tasks/cancel through the replica", envs["replica"].task(tok, "/mcp/beta", "tasks/cancel", task.TaskID, ""))
	if got := envs["first"].get(tok, "/mcp/beta", task.TaskID); got.Status != "cancelled" {
		t.Errorf("tasks/get after the replica's cancel: %+v; want cancelled", got)
	}
}

// tasks/update and tasks/cancel, which change a task, leave an audit entry
// each, naming the task's server and its own id, with the outcome (a
// refused one too); tasks/get, which a client polls, leaves none. A
// task's request has a span, a child of the client's trace, with a span of
// its request to the server under it, whose trace context the server gets.
func TestTaskChangesAreAuditedAndTraced(t *testing.T) {
	rcv, flush := tracing(t)
	l, entries := auditLog(t)
	e := newTasksEnvWith(t, gateway.Options{Audit: l})

	asked := e.call(e.alice, "/mcp/alpha", "confirm_delete", `{"filename":"a.txt"}`, tasksCaps)
	ack(t, "tasks/update", e.task(e.alice, "/mcp/alpha", "tasks/update", asked.TaskID, `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`))
	slow := e.call(e.alice, "/mcp", "beta__slow_compute", `{"polls":100}`, tasksCaps)
	if a := e.task(e.bob, "/mcp", "tasks/cancel", slow.TaskID, ""); a.status != http.StatusBadRequest {
		t.Errorf("bob's cancel of alice's task: HTTP %d, result %s; want refused", a.status, a.result)
	}
	ack(t, "tasks/cancel", e.task(e.alice, "/mcp", "tasks/cancel", slow.TaskID, ""))

	const traceID, parentID = "0123456789abcdef0123456789abcdef", "00f067aa0ba902b7"
	id, _ := json.Marshal(slow.TaskID)
	r := newRequest(t, e.url+"/mcp", "tasks/get", slow.TaskID, `{"taskId":`+string(id)+`}`, tasksCaps)
	r.Header.Set("Authorization", "Bearer "+e.alice)
	r.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	got := send(t, r)
	var polled struct {
		Status string `json:"status"`
		Meta   struct {
			Traceparent string `json:"traceparent"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(got.result), &polled); err != nil || polled.Status != "cancelled" {
		t.Fatalf("tasks/get: HTTP %d, result %s, error %s; want the cancelled task", got.status, got.result, got.err)
	}
	flush()

	spans := rcv.Trace(traceID)
	in := spanNamed(t, spans, "tasks/get "+slow.TaskID)
	out := spanNamed(t, spans, "tasks/get task-1")
	if in.ParentID != parentID || out.ParentID != in.SpanID {
		t.Errorf("spans: the request's parent %s (want %s), the upstream request's parent %s (want %s)", in.ParentID, parentID, out.ParentID, in.SpanID)
	}
	wantAttrs(t, in, map[string]string{"mcp.method.name": "tasks/get", "mcp.task.id": slow.TaskID, "switchboard.server": "beta",
		"switchboard.principal": "alice", "switchboard.outcome": "ok"})
	wantAttrs(t, out, map[string]string{"mcp.method.name": "tasks/get", "mcp.task.id": "task-1", "switchboard.server": "beta"})
	if want := "00-" + traceID + "-" + out.SpanID + "-01"; polled.Meta.Traceparent != want {
		t.Errorf("the server got traceparent %q, want %q (the upstream request's span)", polled.Meta.Traceparent, want)
	}

	var audited []string
	for _, en := range entries() {
		if en.Kind != sb.AuditTask {
			continue
		}
		audited = append(audited, strings.Join([]string{en.Principal, en.Surface, en.Server, en.Name, en.Outcome}, " | "))
		if en.Name == "tasks/update task-1" && (en.ArgsSHA256 == "" || en.RequestBytes == 0) {
			t.Errorf("the update's entry %+v: want its input responses' size and hash", en)
		}
	}
	slices.Sort(audited)
	want := []string{
		"alice | mcp | beta | tasks/cancel task-1 | ok",
		"alice | mcp_server | alpha | tasks/update task-1 | ok",
		"bob | mcp |  | tasks/cancel | not_found",
	}
	if !slices.Equal(audited, want) {
		t.Errorf("task entries:\n%s\nwant:\n%s", strings.Join(audited, "\n"), strings.Join(want, "\n"))
	}
}

// A server's task ids are its own to choose, and none reaches another
// task or is cut: an id with the separator in it, an empty one, one with
// bytes JSON must escape, and one of 16 KiB are each namespaced, and
// tasks/get and tasks/cancel with the namespaced id reach that task (with
// the server's id) and answer with the client's id.
func TestOddTaskIDsOfAServerHoldTheirWay(t *testing.T) {
	e := newTasksEnv(t)
	for _, id := range []string{"a.b.c", "", "quote\" \\ \u00e9 \u2028 </script>", strings.Repeat("x", 16<<10)} {
		for _, path := range []string{"/mcp/beta", "/mcp/alpha"} {
			tool := "slow_compute"
			args, _ := json.Marshal(map[string]any{"polls": 100, "task_id": id})
			task := e.call(e.alice, path, tool, string(args), tasksCaps)
			server := strings.TrimPrefix(path, "/mcp/")
			prefix, rest, _ := strings.Cut(task.TaskID, ".")
			_, got, _ := strings.Cut(rest, ".")
			if prefix != server || got != id {
				t.Errorf("%s, server id of %d bytes: client id %.80q; want %s.MAC.<the server's id>", path, len(id), task.TaskID, server)
				continue
			}
			if got := e.get(e.alice, path, task.TaskID); got.Status != "working" || got.TaskID != task.TaskID {
				t.Errorf("%s, server id of %d bytes: tasks/get %+v", path, len(id), got)
			}
			ack(t, "tasks/cancel", e.task(e.alice, path, "tasks/cancel", task.TaskID, ""))
			if got := e.get(e.alice, path, task.TaskID); got.Status != "cancelled" {
				t.Errorf("%s, server id of %d bytes: after tasks/cancel %+v", path, len(id), got)
			}
		}
	}
	// A task whose id is not a string could never be asked after: the
	// call is the server's error, not a task the client cannot reach.
	for _, path := range []string{"/mcp/beta", "/mcp/alpha"} {
		a := e.do(e.alice, path, "tools/call", "slow_compute", `{"name":"slow_compute","arguments":{"polls":100,"numeric_task_id":7}}`, tasksCaps)
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Meta map[string]struct {
				Code string `json:"code"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(a.result), &res); err != nil || !res.IsError || res.Meta["switchboard/error"].Code != string(sb.CodeServerError) ||
			len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "cannot be asked after") {
			t.Errorf("%s, a numeric taskId: HTTP %d, result %s, error %s; want a server_error result", path, a.status, a.result, a.err)
		}
	}
}
