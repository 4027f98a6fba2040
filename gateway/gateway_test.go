package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) {
			testserver.RemoveBinary()
			daemontest.RemoveBinary()
			os.Exit(code)
		}),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	)
}

// env is a registry with real server processes, served by the gateway
// through the API's handler on 127.0.0.1.
type env struct {
	t   *testing.T
	reg *registry.Registry
	gw  *gateway.Gateway // set by newEnv
	url string
}

func newEnv(t *testing.T, token string, servers ...*sb.ServerConfig) *env {
	t.Helper()
	return newEnvOpts(t, token, gateway.Options{ResyncInterval: time.Second}, servers...)
}

// newEnvWith is newEnv with gateway options and no token.
func newEnvWith(t *testing.T, opts gateway.Options, servers ...*sb.ServerConfig) *env {
	t.Helper()
	return newEnvOpts(t, "", opts, servers...)
}

// newEnvOpts stores servers, and serves them through the gateway behind the
// API's handler on 127.0.0.1, wired in the order serve wires it (gateway
// first, then Load).
func newEnvOpts(t *testing.T, token string, opts gateway.Options, servers ...*sb.ServerConfig) *env {
	t.Helper()
	return newEnvRegistry(t, token, registry.Options{}, opts, servers...)
}

// newEnvRegistry is newEnvOpts with registry options too.
func newEnvRegistry(t *testing.T, token string, ro registry.Options, opts gateway.Options, servers ...*sb.ServerConfig) *env {
	t.Helper()
	st := sqlitetest.Store(t, servers...)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ro.Logger = log
	reg := registry.New(st, &ro)
	// With opts.Audit, the calls are recorded as serve records them.
	ex := executor.New(opts.Audit.Instrument(executor.NewMCP(reg)))
	opts.Executor, opts.Logger = ex, log
	gw := gateway.New(reg, opts)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Token: token, Logger: log, MCP: gw.Handler(),
		Warnings: gw.Warnings, Search: gw.Search, Audit: opts.Audit}))
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		reg.Shutdown(context.Background())
	})
	return &env{t: t, reg: reg, gw: gw, url: srv.URL}
}

func stdio(t *testing.T, name string, args ...string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: args, ProtocolVersion: "2025-11-25"}
}

// connect opens a downstream go-sdk client session to path (/mcp or
// /mcp/NAME), with handlers from opts.
func (e *env) connect(path string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + path}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("connecting to %s: %v", path, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// waitTools waits until the downstream list has every name in want.
func waitTools(t *testing.T, cs *mcp.ClientSession, want ...string) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var names []string
	for time.Now().Before(deadline) {
		names = names[:0]
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		ok := true
		for _, w := range want {
			ok = ok && slices.Contains(names, w)
		}
		if ok {
			return names
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("tools %v, want %v", names, want)
	return nil
}

// text returns a function that takes a call's result and error and gives
// its first text content, failing the test on an error.
func text(t *testing.T) func(*mcp.CallToolResult, error) string {
	return func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Content) == 0 {
			t.Fatalf("empty result %+v", res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
}

func TestAggregateCallsStdioAndHTTPServers(t *testing.T) {
	httpSrv := testserver.StartHTTP(t, "-name", "remote-one")
	e := newEnv(t, "",
		stdio(t, "local"),
		&sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: httpSrv.URL})
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "local__echo", "remote__echo", "local__slow", "remote__add")
	for _, name := range []string{"local__echo", "remote__echo"} {
		got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": name}}))
		if got != name {
			t.Errorf("%s answered %q", name, got)
		}
	}
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remote__add", Arguments: map[string]any{"a": 2, "b": 3}})); got != "5" {
		t.Errorf("remote__add = %q", got)
	}
	// Prompts are named like tools; resources keep their URIs.
	var prompts []string
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "local__greet") || !slices.Contains(prompts, "remote__greet") {
		t.Errorf("prompts %v", prompts)
	}
	gp, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "remote__greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada!" {
		t.Errorf("prompt: %v %+v", err, gp)
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://hello"})
	if err != nil || rr.Contents[0].Text != "hello" {
		t.Errorf("resource: %v %+v", err, rr)
	}
	rr, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://items/42"})
	if err != nil || rr.Contents[0].Text != "item 42" {
		t.Errorf("templated resource: %v %+v", err, rr)
	}
}

func TestPerServerEndpointKeepsNames(t *testing.T) {
	e := newEnv(t, "", stdio(t, "solo"))
	cs := e.connect("/mcp/solo", nil)
	names := waitTools(t, cs, "echo", "slow")
	for _, n := range names {
		if strings.Contains(n, "__") {
			t.Errorf("prefixed name %q on the per-server endpoint", n)
		}
	}
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})); got != "x" {
		t.Errorf("echo = %q", got)
	}
	resp, err := http.Post(e.url+"/mcp/nobody", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown server: %d", resp.StatusCode)
	}
}

func TestProgressArrivesInOrderBeforeTheResult(t *testing.T) {
	e := newEnv(t, "", stdio(t, "p"))
	var mu sync.Mutex
	var got []float64
	cs := e.connect("/mcp", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params.Progress)
		mu.Unlock()
	}})
	waitTools(t, cs, "p__slow")
	params := &mcp.CallToolParams{Name: "p__slow", Arguments: map[string]any{"duration_ms": 500, "interval_ms": 50}}
	params.SetProgressToken("downstream-token")
	text(t)(cs.CallTool(context.Background(), params))
	// The downstream client handles notifications on its own goroutine;
	// give it a moment, then check order and completeness.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	want := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if !slices.Equal(got, want) {
		t.Fatalf("progress %v, want %v", got, want)
	}
}

func TestDownstreamCancelReachesTheUpstream(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	e := newEnv(t, "", stdio(t, "c", "-events", events))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "c__sleep")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "c__sleep", Arguments: map[string]any{"ms": 30000}})
		errc <- err
	}()
	testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "call" && ev.Tool == "sleep" }, 10*time.Second)
	cancelled := time.Now()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	seen := testserver.WaitEvent(t, events, func(ev testserver.Event) bool { return ev.Event == "cancelled" && ev.Tool == "sleep" }, 5*time.Second)
	t.Logf("downstream cancel to upstream handler cancelled: %v", seen.Time.Sub(cancelled).Round(time.Millisecond))
}

func TestUpstreamElicitationIsAnsweredDownstream(t *testing.T) {
	e := newEnv(t, "", stdio(t, "el"))
	var asked string
	cs := e.connect("/mcp", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = r.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "forty-two"}}, nil
	}})
	waitTools(t, cs, "el__elicit")
	got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "el__elicit", Arguments: map[string]any{"message": "Meaning?"}}))
	if got != "answer: forty-two" || asked != "Meaning?" {
		t.Fatalf("result %q, asked %q", got, asked)
	}
}

func TestUpstreamSamplingIsAnsweredDownstream(t *testing.T) {
	e := newEnv(t, "", stdio(t, "sm"))
	cs := e.connect("/mcp", &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		q := r.Params.Messages[0].Content.(*mcp.TextContent).Text
		return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "echo " + q}}, nil
	}})
	waitTools(t, cs, "sm__sample")
	got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sm__sample", Arguments: map[string]any{"message": "hi"}}))
	if got != "model test-model says: echo hi" {
		t.Fatalf("result %q", got)
	}
}

func TestLogsAndResourceUpdatesAreRelayed(t *testing.T) {
	e := newEnv(t, "", stdio(t, "lg"))
	logs := make(chan *mcp.LoggingMessageParams, 10)
	updates := make(chan string, 10)
	cs := e.connect("/mcp", &mcp.ClientOptions{
		LoggingMessageHandler:  func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	})
	waitTools(t, cs, "lg__log")
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://hello"}); err != nil {
		t.Fatal(err)
	}
	text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lg__log", Arguments: map[string]any{"message": "disk almost full"}}))
	select {
	case l := <-logs:
		if l.Data != "disk almost full" || l.Logger != "lg/testserver" {
			t.Errorf("log %+v", l)
		}
	case <-time.After(5 * time.Second):
		t.Error("no log message relayed")
	}
	select {
	case uri := <-updates:
		if uri != "test://hello" {
			t.Errorf("update for %q", uri)
		}
	case <-time.After(5 * time.Second):
		t.Error("no resource update relayed")
	}
}

func TestUpstreamCrashMidCallIsAClearError(t *testing.T) {
	e := newEnv(t, "", stdio(t, "boom"))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "boom__crash")
	done := make(chan struct{})
	var res *mcp.CallToolResult
	var err error
	go func() {
		defer close(done)
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "boom__crash"})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the downstream call hangs after the upstream crashed")
	}
	if err != nil {
		t.Fatalf("transport error instead of a tool error: %v", err)
	}
	msg := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(msg, "connection lost") || !strings.Contains(msg, "exited with status 3") {
		t.Fatalf("result %+v %q, want an isError result naming the exit", res, msg)
	}
	if meta, _ := res.Meta["switchboard/error"].(map[string]any); meta["code"] != "connection_lost" {
		t.Errorf("_meta %v", res.Meta)
	}
}

func TestServerLeavingAndReturningUpdatesTheList(t *testing.T) {
	e := newEnv(t, "", stdio(t, "steady"), stdio(t, "flaky"))
	changed := make(chan struct{}, 100)
	cs := e.connect("/mcp", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	waitTools(t, cs, "steady__echo", "flaky__echo")
	for len(changed) > 0 {
		<-changed
	}
	if _, err := e.reg.SetEnabled(context.Background(), "flaky", false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed when a server left")
	}
	names := waitTools(t, cs, "steady__echo")
	for _, n := range names {
		if strings.HasPrefix(n, "flaky__") {
			t.Fatalf("the disabled server's tools are still listed: %v", names)
		}
	}
	if _, err := e.reg.SetEnabled(context.Background(), "flaky", true); err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "steady__echo", "flaky__echo")
}

func TestHungUpstreamDoesNotDelayTheAggregateList(t *testing.T) {
	// Its first attempt hangs in tools/list for its startup timeout, two
	// minutes; the lists do not wait for first attempts (ReadyTimeout -1).
	// So a list that waited for it would come back only once that attempt
	// had ended: told by the attempt, not by a clock.
	hung := stdio(t, "hung", "-hang-tools-list")
	hung.StartupTimeoutMS = 120_000
	e := newEnvWith(t, gateway.Options{ReadyTimeout: -1}, stdio(t, "fine"), hung)
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "fine__echo")
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if v, _ := e.reg.Get("hung"); v.Runtime.Status != sb.StatusConnecting || v.Runtime.Attempt != 0 {
		t.Errorf("when the list was answered, hung was %s at attempt %d; want its first attempt still hung", v.Runtime.Status, v.Runtime.Attempt)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "hung__") {
			t.Errorf("a server that never listed its tools shows %q", n)
		}
	}
	v, _ := e.reg.Get("hung")
	if v.Runtime.Status == sb.StatusConnected {
		t.Errorf("the hung server counts as connected: %+v", v.Runtime)
	}
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fine__echo", Arguments: map[string]any{"text": "ok"}})); got != "ok" {
		t.Errorf("fine__echo = %q", got)
	}
}

func TestMCPEndpointProtection(t *testing.T) {
	e := newEnv(t, "tok3n", stdio(t, "p"))
	// Without the token: 401, and nothing about the servers.
	c := mcp.NewClient(&mcp.Implementation{Name: "x"}, nil)
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp"}, nil); err == nil {
		t.Fatal("connected without the token")
	}
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := post(nil); st != 401 {
		t.Errorf("no token: %d", st)
	}
	auth := "Bearer tok3n"
	if st := post(map[string]string{"Authorization": auth, "Host": "evil.example:80"}); st != 403 {
		t.Errorf("DNS rebinding (foreign Host on loopback): %d, want 403", st)
	}
	if st := post(map[string]string{"Authorization": auth, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); st != 403 {
		t.Errorf("cross-origin browser request: %d, want 403", st)
	}
}

func TestStdioCommandServesTheAggregate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	st.Create(context.Background(), stdio(t, "viastdio"))
	st.Close()

	cmd := daemontest.Command(t, "stdio", "--db", "sqlite:"+db)
	cmd.Stderr = t.Output()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "viastdio__echo")
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "viastdio__echo", Arguments: map[string]any{"text": "through stdio"}})); got != "through stdio" {
		t.Fatalf("echo = %q", got)
	}
	// Closing stdin stops switchboard and the servers it started.
	if err := cs.Close(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("close: %v", err)
		}
		t.Fatalf("switchboard stdio exited with %v", err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, 0); err == nil {
		if out, _ := exec.Command("ps", "-o", "pid,stat,args", "-g", fmt.Sprint(cmd.Process.Pid)).Output(); strings.Count(string(out), "\n") > 1 && !strings.Contains(string(out), " Z") {
			t.Errorf("processes left in switchboard's group:\n%s", out)
		}
	}
}

func TestNewestProtocolIsServedStateless(t *testing.T) {
	e := newEnv(t, "", stdio(t, "modern"))
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
	// No pinned version: the go-sdk client probes 2026-07-28 first.
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	waitTools(t, cs, "modern__echo")
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "modern__echo", Arguments: map[string]any{"text": "new"}})); got != "new" {
		t.Fatalf("echo = %q", got)
	}
}
