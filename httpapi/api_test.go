package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/stats"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) { testserver.RemoveBinary(); os.Exit(code) }),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		// database/sql's connection opener lives as long as the pool, and
		// pgx pools close asynchronously.
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
	)
}

// env is a running API over a real database and real server processes.
type env struct {
	t     *testing.T
	url   string
	token string
	c     *client.Client // of url, with token
	dsn   string
	reg   *registry.Registry
	store sb.Store
	logs  *testserver.Buffer
	srv   *httptest.Server
}

// backends returns the databases to run a test against: SQLite always,
// and PostgreSQL (a fresh database per test, on the server the test
// command starts; without one, skipped on a developer's machine and failed
// in CI).
func backends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sb.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
}

func newEnv(t *testing.T, dsn, token string) *env {
	t.Helper()
	e := &env{t: t, dsn: dsn, token: token, logs: &testserver.Buffer{}}
	e.start()
	return e
}

// start opens the database and serves the API; stop undoes it. A test may
// stop and start again to see what survives a restart.
func (e *env) start() {
	t := e.t
	st, err := store.Open(context.Background(), e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := registry.New(st, &registry.Options{Logger: log,
		Session: upstream.Options{HealthInterval: 200 * time.Millisecond, ProbeTimeout: time.Second}})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(reg)
	series := stats.New(nil)
	ex := executor.New(m.Instrument(series.Instrument(executor.NewMCP(reg))))
	e.srv = httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Stats: series, Token: e.token, Logger: log}))
	e.url, e.reg, e.store = e.srv.URL, reg, st
	if e.c, err = client.New(e.url, e.token, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.srv == nil {
		return
	}
	e.c.Close()
	e.srv.CloseClientConnections()
	e.srv.Close()
	if err := e.reg.Shutdown(context.Background()); err != nil {
		e.t.Errorf("registry shutdown: %v", err)
	}
	e.store.Close()
	e.srv = nil
}

// do sends a request as is and decodes a JSON answer into out (if not
// nil), returning the status and the raw body: for what the client does
// not send (bodies with a version, bad input, raw headers).
func (e *env) do(method, path string, body any, out any, hdr ...string) (int, string) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decoding %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, string(raw)
}

func (e *env) waitStatus(name string, want sb.Status) sb.ServerView {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var v sb.ServerView
	for time.Now().Before(deadline) {
		v, _ = e.c.Server(context.Background(), name)
		if v.Runtime.Status == want {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("%s did not become %s: %+v", name, want, v.Runtime)
	return v
}

func stdioServer(t *testing.T, name string, args ...string) map[string]any {
	return map[string]any{
		"name": name, "transport": "stdio", "command": testserver.Binary(t), "args": args,
		"env": map[string]string{"API_KEY": "sekrit-api-key-value"}, "protocol_version": "2025-11-25",
	}
}

func forEachBackend(t *testing.T, test func(t *testing.T, dsn func(t *testing.T) string)) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) { test(t, dsn) })
	}
}

func TestServerLifecycleThroughTheAPI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn func(t *testing.T) string) {
		e := newEnv(t, dsn(t), "")
		var v sb.ServerView
		if st, body := e.do("POST", "/api/v1/servers", stdioServer(t, "alpha"), &v); st != 201 {
			t.Fatalf("create: %d %s", st, body)
		}
		if v.Version != 1 || v.Env["API_KEY"] != "***" {
			t.Fatalf("created view: version %d env %v", v.Version, v.Env)
		}
		v = e.waitStatus("alpha", sb.StatusConnected)
		pid := v.Runtime.PID

		tools, err := e.c.ServerTools(context.Background(), "alpha")
		if err != nil || len(tools) == 0 || tools[0].Address != "alpha/"+tools[0].Name {
			t.Fatalf("tools %+v, %v", tools, err)
		}

		// A change of the call timeout alone does not reconnect.
		upd := stdioServer(t, "alpha")
		upd["env"] = map[string]string{"API_KEY": "***"} // keep the stored secret
		upd["call_timeout_ms"] = 5000
		upd["version"] = v.Version
		if st, body := e.do("PUT", "/api/v1/servers/alpha", upd, &v); st != 200 || v.CallTimeoutMS != 5000 || v.Version != 2 {
			t.Fatalf("update: %d %s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
		if v = e.waitStatus("alpha", sb.StatusConnected); v.Runtime.PID != pid {
			t.Fatalf("a timeout change restarted the server: pid %d -> %d", pid, v.Runtime.PID)
		}
		stored, err := e.store.Get(context.Background(), "alpha")
		if err != nil || stored.Config.Env["API_KEY"] != "sekrit-api-key-value" {
			t.Fatalf("the masked secret was not kept: %v %v", err, stored.Config.Env)
		}

		// A change of the arguments does. It is a new destination for the
		// secret, so the masked value is refused and must be sent again.
		upd["args"] = []string{"-name", "alpha2"}
		delete(upd, "version")
		if st, body := e.do("PUT", "/api/v1/servers/alpha", upd, nil); st != 400 || !strings.Contains(body, "send the value again") {
			t.Fatalf("new arguments with the masked secret: %d %s, want 400", st, body)
		}
		upd["env"] = map[string]string{"API_KEY": "sekrit-api-key-value"}
		if st, body := e.do("PUT", "/api/v1/servers/alpha", upd, &v); st != 200 {
			t.Fatalf("update args: %d %s", st, body)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			e.do("GET", "/api/v1/servers/alpha", nil, &v)
			if v.Runtime.Status == sb.StatusConnected && v.Runtime.ServerInfo != nil && v.Runtime.ServerInfo.Name == "alpha2" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if v.Runtime.PID == pid || v.Runtime.ServerInfo == nil || v.Runtime.ServerInfo.Name != "alpha2" {
			t.Fatalf("args change did not reconnect: %+v", v.Runtime)
		}
		if proc.Alive(pid) {
			t.Errorf("the old process %d still runs after the reconnect", pid)
		}
		pid = v.Runtime.PID

		if st, _ := e.do("POST", "/api/v1/servers/alpha/disable", nil, &v); st != 200 || v.Runtime.Status != sb.StatusDisabled {
			t.Fatalf("disable: %d %+v", st, v.Runtime)
		}
		if proc.Alive(pid) {
			t.Errorf("process %d runs after disable", pid)
		}
		if st, _ := e.do("POST", "/api/v1/servers/alpha/enable", nil, &v); st != 200 {
			t.Fatalf("enable: %d", st)
		}
		e.waitStatus("alpha", sb.StatusConnected)
		if st, _ := e.do("POST", "/api/v1/servers/alpha/restart", nil, nil); st != 202 {
			t.Fatalf("restart: %d", st)
		}
		logs, _ := e.c.Logs(context.Background(), "alpha")
		if !strings.Contains(strings.Join(logs, "\n"), "testserver: started") {
			t.Errorf("logs %q", logs)
		}
		if st, _ := e.do("DELETE", "/api/v1/servers/alpha", nil, nil); st != 204 {
			t.Fatalf("delete: %d", st)
		}
		var eb api.ErrorBody
		if st, _ := e.do("GET", "/api/v1/servers/alpha", nil, &eb); st != 404 || eb.Error.Code != "not_found" {
			t.Fatalf("after delete: %d %+v", st, eb)
		}
	})
}

func TestRestartBringsBackEveryServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn func(t *testing.T) string) {
		e := newEnv(t, dsn(t), "")
		e.do("POST", "/api/v1/servers", stdioServer(t, "one"), nil)
		e.do("POST", "/api/v1/servers", stdioServer(t, "two", "-tools", "3"), nil)
		off := stdioServer(t, "off")
		off["enabled"] = false
		e.do("POST", "/api/v1/servers", off, nil)
		e.waitStatus("one", sb.StatusConnected)
		before := e.waitStatus("two", sb.StatusConnected)

		e.stop()
		e.start()

		if list, err := e.c.Servers(context.Background()); len(list) != 3 {
			t.Fatalf("%d servers after restart (%v), want 3", len(list), err)
		}
		after := e.waitStatus("two", sb.StatusConnected)
		e.waitStatus("one", sb.StatusConnected)
		if after.Runtime.ToolCount != before.Runtime.ToolCount || after.Args[1] != "3" || after.Env["API_KEY"] != "***" {
			t.Fatalf("after restart: %+v", after)
		}
		if v := e.waitStatus("off", sb.StatusDisabled); v.Runtime.PID != 0 {
			t.Fatalf("a disabled server runs after restart: %+v", v.Runtime)
		}
	})
}

func TestConcurrentUpdatesGetOneConflict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn func(t *testing.T) string) {
		e := newEnv(t, dsn(t), "")
		var v sb.ServerView
		cfg := stdioServer(t, "shared")
		cfg["enabled"] = false
		e.do("POST", "/api/v1/servers", cfg, &v)
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range statuses {
			wg.Go(func() {
				body := stdioServer(t, "shared")
				body["enabled"] = false
				body["env"] = map[string]string{"API_KEY": "***"}
				body["call_timeout_ms"] = 1000 * (i + 1)
				body["version"] = v.Version
				statuses[i], _ = e.do("PUT", "/api/v1/servers/shared", body, nil)
			})
		}
		wg.Wait()
		if !(statuses[0] == 200 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 200) {
			t.Fatalf("statuses %v, want one 200 and one 409", statuses)
		}
		var eb api.ErrorBody
		body := stdioServer(t, "shared")
		body["version"] = v.Version
		if st, _ := e.do("PUT", "/api/v1/servers/shared", body, &eb); st != 409 || eb.Error.Code != "conflict" {
			t.Fatalf("stale version: %d %+v", st, eb)
		}
		if st, _ := e.do("PUT", "/api/v1/servers/shared", map[string]any{"name": "shared", "transport": "stdio", "command": "x"}, nil, "If-Match", `"1"`); st != 409 {
			t.Fatalf("stale If-Match: %d", st)
		}
	})
}

func TestDraftTestIsIsolatedAndLeavesNothing(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "live"), nil)
	live := e.waitStatus("live", sb.StatusConnected)

	var res api.TestResult
	// Other arguments than the stored server's: a masked secret would be
	// refused (a new destination), so the draft carries its own.
	draft := stdioServer(t, "live", "-tools", "2", "-spawn-child")
	if st, body := e.do("POST", "/api/v1/test", draft, &res); st != 200 {
		t.Fatalf("test: %d %s", st, body)
	}
	if res.Runtime.Status != sb.StatusConnected || res.Runtime.PID == live.Runtime.PID || res.Runtime.ToolCount != live.Runtime.ToolCount+2 {
		t.Fatalf("test result %+v (live pid %d, %d tools)", res.Runtime, live.Runtime.PID, live.Runtime.ToolCount)
	}
	if proc.Alive(res.Runtime.PID) {
		t.Errorf("the test session's process %d is still running", res.Runtime.PID)
	}
	if proc.GroupHasLiveMember(res.Runtime.PID) {
		t.Errorf("the test session's process group %d still has members (the grandchild)", res.Runtime.PID)
	}
	after := e.waitStatus("live", sb.StatusConnected)
	if after.Runtime.PID != live.Runtime.PID || after.Runtime.Reconnects != 0 {
		t.Fatalf("the live session was disturbed: %+v -> %+v", live.Runtime, after.Runtime)
	}

	// A failing draft reports the classified error.
	bad := map[string]any{"name": "broken", "transport": "stdio", "command": "switchboard-no-such-command"}
	e.do("POST", "/api/v1/test", bad, &res)
	if res.Runtime.Error == nil || res.Runtime.Error.Phase != sb.PhaseSpawn || res.Runtime.Error.Code != "command_not_found" {
		t.Fatalf("failing draft: %+v", res.Runtime)
	}
	if tr, err := e.c.TestServer(context.Background(), "live"); err != nil || tr.Runtime.Status != sb.StatusConnected {
		t.Fatalf("test of the stored server: %v %+v", err, tr.Runtime)
	}
}

func TestSecretsAppearInNoResponseAndNoLog(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	const secret, hsecret = "sekrit-api-key-value", "Bearer header-sekrit"
	var bodies []string
	record := func(_ int, body string) { bodies = append(bodies, body) }
	record(e.do("POST", "/api/v1/servers", stdioServer(t, "s1"), nil))
	remote := map[string]any{"name": "r1", "transport": "streamable-http", "url": "http://127.0.0.1:1/mcp",
		"headers": map[string]string{"Authorization": hsecret}, "retry": map[string]any{"max_attempts": 1}}
	record(e.do("POST", "/api/v1/servers", remote, nil))
	e.waitStatus("s1", sb.StatusConnected)
	e.waitStatus("r1", sb.StatusError)
	record(e.do("GET", "/api/v1/servers", nil, nil))
	record(e.do("GET", "/api/v1/servers/s1", nil, nil))
	record(e.do("GET", "/api/v1/servers/r1", nil, nil))
	record(e.do("POST", "/api/v1/servers/r1/test", nil, nil))
	record(e.do("POST", "/api/v1/test", remote, nil))
	record(e.do("GET", "/metrics", nil, nil))
	record(e.do("POST", "/api/v1/call", map[string]any{"tool": "r1/x"}, nil))
	all := strings.Join(bodies, "\n") + e.logs.String()
	for _, s := range []string{secret, hsecret, "header-sekrit"} {
		if strings.Contains(all, s) {
			t.Errorf("secret %q appears in a response or log line", s)
		}
	}
	if !strings.Contains(all, `"API_KEY":"***"`) || !strings.Contains(all, `"Authorization":"***"`) {
		t.Errorf("masked values missing from views")
	}
}

func TestCallRoute(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "tools"), nil)
	e.waitStatus("tools", sb.StatusConnected)

	var cr api.CallResponse
	if st, body := e.do("POST", "/api/v1/call", map[string]any{"tool": "tools/echo", "arguments": map[string]any{"text": "hi"}}, &cr); st != 200 || cr.Result == nil {
		t.Fatalf("echo: %d %s", st, body)
	}
	if _, body := e.do("POST", "/api/v1/call", map[string]any{"tool": "tools/fail", "arguments": map[string]any{"message": "boom"}}, nil); !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "boom") {
		t.Fatalf("tool error: %s", body)
	}
	for _, tc := range []struct {
		body   any
		status int
		code   sb.Code
	}{
		{map[string]any{"tool": "tools/ecko"}, 404, "unknown_tool"},
		{map[string]any{"tool": "tols/echo"}, 404, "unknown_server"},
		{map[string]any{"tool": "echo"}, 400, "bad_address"},
		{map[string]any{"tool": "tools/add", "arguments": map[string]any{"a": "x", "b": 1}}, 400, "invalid_arguments"},
		{map[string]any{"tool": "tools/sleep", "arguments": map[string]any{"ms": 5000}, "options": map[string]any{"timeout_ms": 200}}, 504, "timeout"},
		{map[string]any{"tool": "tools/echo", "options": map[string]any{"timeout_ms": -1}}, 400, "invalid_options"},
		{`{"tool": "tools/echo", "bogus": 1}`, 400, "bad_request"},
		{`{"tool": `, 400, "bad_request"},
	} {
		var eb api.ErrorBody
		st, body := e.do("POST", "/api/v1/call", tc.body, &eb)
		if st != tc.status || eb.Error.Code != tc.code || eb.Error.Message == "" {
			t.Errorf("%v: %d %s, want %d %s", tc.body, st, body, tc.status, tc.code)
		}
	}
	_, err := e.c.Call(context.Background(), "tools/ecko", nil, client.CallOptions{})
	if !strings.Contains(err.Error(), `did you mean "echo"`) {
		t.Errorf("no suggestion: %v", err)
	}
}

func TestStreamedCallSendsProgressThenResult(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "tools"), nil)
	e.waitStatus("tools", sb.StatusConnected)
	var progress []sb.Progress
	onProgress := func(p sb.Progress) { progress = append(progress, p) }
	res, err := e.c.Call(context.Background(), "tools/slow", map[string]any{"duration_ms": 300, "interval_ms": 100},
		client.CallOptions{Timeout: 5 * time.Second, OnProgress: onProgress})
	if err != nil || res.IsError || len(progress) != 3 {
		t.Fatalf("result %+v, %v after progress %+v", res, err, progress)
	}
	if p := progress[2]; p.Progress != 3 || p.Total != 3 {
		t.Fatalf("last progress %+v", p)
	}
	_, err = e.c.Call(context.Background(), "tools/sleep", map[string]any{"ms": 5000},
		client.CallOptions{Timeout: 100 * time.Millisecond, OnProgress: onProgress})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 0 || ce.Code != sb.CodeTimeout {
		t.Fatalf("timeout: %v, want the error event of a timeout", err)
	}
}

func TestStreamedCallRelaysElicitation(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "tools"), nil)
	e.waitStatus("tools", sb.StatusConnected)
	var asked []sb.ElicitationRequest
	res, err := e.c.Call(context.Background(), "tools/elicit", map[string]any{"message": "Ship it?"}, client.CallOptions{
		OnElicitation: func(_ context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			asked = append(asked, req)
			return sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		}})
	if err != nil || len(asked) != 1 || asked[0].Message != "Ship it?" {
		t.Fatalf("asked %+v, %v", asked, err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "answer: yes") {
		t.Fatalf("result %s", b)
	}
}

func TestEventsStreamStatusChanges(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, err := e.c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	e.do("POST", "/api/v1/servers", stdioServer(t, "watched"), nil)
	seen := map[sb.Reason]bool{}
	for !seen[sb.ReasonConnected] {
		ev, err := events.Next()
		if err != nil {
			break
		}
		if ev.Server == "watched" {
			seen[ev.Reason] = true
		}
	}
	for _, r := range []sb.Reason{sb.ReasonCreated, sb.ReasonStarting, sb.ReasonConnected} {
		if !seen[r] {
			t.Errorf("no %q event; saw %v", r, seen)
		}
	}
}

func TestMetricsReportServersAndCalls(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "m1"), nil)
	e.waitStatus("m1", sb.StatusConnected)
	e.do("POST", "/api/v1/call", map[string]any{"tool": "m1/echo", "arguments": map[string]any{"text": "x"}}, nil)
	e.do("POST", "/api/v1/call", map[string]any{"tool": "m1/sleep", "arguments": map[string]any{"ms": 2000}, "options": map[string]any{"timeout_ms": 50}}, nil)
	body, _ := e.c.Metrics(context.Background())
	for _, want := range []string{
		`switchboard_server_status{server="m1",status="connected"} 1`,
		`switchboard_calls_total{outcome="ok",server="m1"} 1`,
		`switchboard_call_timeouts_total{limit="request",server="m1"} 1`,
		`switchboard_call_duration_seconds_count{outcome="ok",server="m1"} 1`,
		`switchboard_calls_in_flight{server="m1"} 0`,
		`switchboard_server_reconnects{server="m1"} 0`,
		`switchboard_server_failed_attempts{server="m1"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "s3cret-token")
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret-token-longer", "Basic s3cret-token"} { // "bearer" is accepted: TestBearerSchemeIsCaseInsensitive
		req, _ := http.NewRequest("GET", e.url+"/api/v1/servers", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || strings.Contains(string(body), "s3cret") || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("auth %q: %d %s", auth, resp.StatusCode, body)
		}
	}
	if st, _ := e.do("GET", "/api/v1/servers", nil, nil); st != 200 {
		t.Fatalf("with the token: %d", st)
	}
	resp, err := http.Get(e.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz needs no token: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestBadInputIsRefusedClearly(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"name":"Bad Name","transport":"stdio","command":"x"}`, 400, "name"},
		{`{"name":"ok","transport":"stdio"}`, 400, "command"},
		{`{"name":"ok","transport":"stdio","comand":"x"}`, 400, "comand"},
		{`{"name":"ok","transport":"stdio","command":"x","env":{"K":"***"}}`, 400, "no secret is stored"},
		{`[1,2]`, 400, "bad_request"},
		{``, 400, "empty"},
		{`{"name":"big","transport":"stdio","command":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too_large"},
	} {
		st, body := e.do("POST", "/api/v1/servers", tc.body, nil)
		if st != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%.60s: %d %s, want %d mentioning %q", tc.body, st, body, tc.status, tc.want)
		}
	}
	e.do("POST", "/api/v1/servers", `{"name":"dup","transport":"stdio","command":"x","enabled":false}`, nil)
	if st, body := e.do("POST", "/api/v1/servers", `{"name":"dup","transport":"stdio","command":"x"}`, nil); st != 409 || !strings.Contains(body, `"exists"`) {
		t.Errorf("duplicate: %d %s", st, body)
	}
	if st, body := e.do("PUT", "/api/v1/servers/dup", `{"name":"other","transport":"stdio","command":"x"}`, nil); st != 400 || !strings.Contains(body, "cannot be changed") {
		t.Errorf("rename: %d %s", st, body)
	}
	if st, _ := e.do("GET", "/api/v1/nothing", nil, nil); st != 404 {
		t.Errorf("unknown route: %d", st)
	}
}
