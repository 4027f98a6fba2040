package client_test

// The client is tested against the real API: the httpapi handler over a
// real registry on a temporary SQLite database, with the testserver as
// the MCP server, served by httptest on 127.0.0.1.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) { testserver.RemoveBinary(); os.Exit(code) }),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	)
}

const token = "client-test-token"

// newDaemon serves the API (with the MCP gateway) with token on
// 127.0.0.1 and returns a client of it.
func newDaemon(t *testing.T) *client.Client {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registrytest.New(t, &registry.Options{Logger: log})
	m := metrics.New(reg)
	ex := executor.New(m.Instrument(executor.NewMCP(reg)))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: log})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Token: token, Logger: log, MCP: gw.Handler()}))
	c, err := client.New(srv.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
	})
	return c
}

func stdio(t *testing.T, name string, args ...string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: args,
		Env: map[string]string{"API_KEY": "client-test-secret"}, ProtocolVersion: "2025-11-25"}
}

// waitConnected waits for the server name to connect.
func waitConnected(t *testing.T, c *client.Client, name string) sb.ServerView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := c.Server(context.Background(), name)
		if err == nil && v.Runtime.Status == sb.StatusConnected {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not connect: %+v, %v", name, v.Runtime, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantCode fails unless err is a *client.Error with the status and code.
func wantCode(t *testing.T, what string, err error, status int, code sb.Code) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != status || ce.Code != code || sb.CodeOf(err) != code || ce.Message == "" {
		t.Fatalf("%s: %#v (%v), want HTTP %d %s", what, err, err, status, code)
	}
	return ce
}

func TestServerRoutes(t *testing.T) {
	c := newDaemon(t)
	ctx := context.Background()

	v, err := c.CreateServer(ctx, stdio(t, "alpha"))
	if err != nil || v.Name != "alpha" || v.Version != 1 || v.Env["API_KEY"] != sb.SecretMask {
		t.Fatalf("create: %+v, %v", v, err)
	}
	_, err = c.CreateServer(ctx, stdio(t, "alpha"))
	wantCode(t, "create again", err, http.StatusConflict, sb.CodeExists)
	_, err = c.CreateServer(ctx, &sb.ServerConfig{Name: "Bad Name", Transport: sb.TransportStdio, Command: "x"})
	wantCode(t, "an invalid config", err, http.StatusBadRequest, sb.CodeInvalidConfig)
	v = waitConnected(t, c, "alpha")

	all, err := c.Servers(ctx)
	if err != nil || len(all) != 1 || all[0].Name != "alpha" {
		t.Fatalf("servers: %+v, %v", all, err)
	}
	tools, err := c.ServerTools(ctx, "alpha")
	if err != nil || !slices.ContainsFunc(tools, func(tv api.ToolView) bool { return tv.Address == "alpha/echo" }) {
		t.Fatalf("tools of alpha: %+v, %v", tools, err)
	}
	every, err := c.Tools(ctx)
	if err != nil || len(every) != len(tools) {
		t.Fatalf("every tool: %d, %v; alpha has %d", len(every), err, len(tools))
	}

	// An update based on the version read; then one based on a stale
	// version is a conflict.
	upd := stdio(t, "alpha")
	upd.Env["API_KEY"] = sb.SecretMask
	upd.CallTimeoutMS = 5000
	if v, err = c.UpdateServer(ctx, "alpha", upd, v.Version); err != nil || v.Version != 2 || v.CallTimeoutMS != 5000 {
		t.Fatalf("update: %+v, %v", v, err)
	}
	_, err = c.UpdateServer(ctx, "alpha", upd, 1)
	wantCode(t, "a stale update", err, http.StatusConflict, sb.CodeConflict)

	if v, err = c.SetEnabled(ctx, "alpha", false); err != nil || v.Runtime.Status != sb.StatusDisabled {
		t.Fatalf("disable: %+v, %v", v.Runtime, err)
	}
	wantCode(t, "restart a disabled server", c.RestartServer(ctx, "alpha"), http.StatusServiceUnavailable, sb.CodeDisabled)
	if _, err = c.SetEnabled(ctx, "alpha", true); err != nil {
		t.Fatalf("enable: %v", err)
	}
	waitConnected(t, c, "alpha")
	if err := c.RestartServer(ctx, "alpha"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	waitConnected(t, c, "alpha")
	if lines, err := c.Logs(ctx, "alpha"); err != nil || !strings.Contains(strings.Join(lines, "\n"), "testserver: started") {
		t.Fatalf("logs: %q, %v", lines, err)
	}

	res, err := c.TestServer(ctx, "alpha")
	if err != nil || res.Runtime.Status != sb.StatusConnected || res.Runtime.ToolCount == 0 {
		t.Fatalf("test of alpha: %+v, %v", res.Runtime, err)
	}
	res, err = c.TestConfig(ctx, &sb.ServerConfig{Name: "broken", Transport: sb.TransportStdio, Command: "switchboard-no-such-command"})
	if err != nil || res.Runtime.Error == nil || res.Runtime.Error.Code != sb.CodeCommandNotFound || res.Runtime.Error.Phase != sb.PhaseSpawn {
		t.Fatalf("test of a draft that cannot start: %+v, %v", res.Runtime, err)
	}

	wantCode(t, "a stale delete", c.DeleteServer(ctx, "alpha", 1), http.StatusConflict, sb.CodeConflict)
	if err := c.DeleteServer(ctx, "alpha", 0); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = c.Server(ctx, "alpha")
	wantCode(t, "after delete", err, http.StatusNotFound, sb.CodeNotFound)
	_, err = c.Logs(ctx, "a/b")
	wantCode(t, "a name that needs escaping", err, http.StatusNotFound, sb.CodeNotFound)
}

func TestCallReturnsResultsToolErrorsAndErrors(t *testing.T) {
	c := newDaemon(t)
	ctx := context.Background()
	c.CreateServer(ctx, stdio(t, "tools"))
	waitConnected(t, c, "tools")

	res, err := c.Call(ctx, "tools/echo", map[string]any{"text": "hi"}, client.CallOptions{})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	raw, err := c.CallRaw(ctx, "tools/mixed", nil, client.CallOptions{})
	if err != nil || !strings.Contains(string(raw), `"type":"resource_link"`) {
		t.Fatalf("mixed, raw: %s, %v", raw, err)
	}
	res, err = c.Call(ctx, "tools/fail", map[string]any{"message": "boom"}, client.CallOptions{})
	if err != nil || !res.IsError {
		t.Fatalf("a tool error is a result: %+v, %v", res, err)
	}

	_, err = c.Call(ctx, "tools/ecko", nil, client.CallOptions{})
	if ce := wantCode(t, "an unknown tool", err, http.StatusNotFound, sb.CodeUnknownTool); !strings.Contains(ce.Message, `did you mean "echo"`) {
		t.Errorf("no suggestion: %v", ce)
	}
	_, err = c.Call(ctx, "tools/sleep", map[string]any{"ms": 5000}, client.CallOptions{Timeout: 100 * time.Millisecond})
	wantCode(t, "a timeout", err, http.StatusGatewayTimeout, sb.CodeTimeout)
	if sb.PhaseOf(err) != sb.PhaseToolCall {
		t.Errorf("a timeout's phase: %q, want %q", sb.PhaseOf(err), sb.PhaseToolCall)
	}
	_, err = c.Call(ctx, "tools/echo", nil, client.CallOptions{Timeout: -time.Second})
	wantCode(t, "a negative timeout", err, http.StatusBadRequest, sb.CodeInvalidOptions)
}

func TestStreamedCallReportsProgressAndAnswersElicitation(t *testing.T) {
	c := newDaemon(t)
	ctx := context.Background()
	c.CreateServer(ctx, stdio(t, "tools"))
	waitConnected(t, c, "tools")

	var progress []sb.Progress
	res, err := c.Call(ctx, "tools/slow", map[string]any{"duration_ms": 300, "interval_ms": 100}, client.CallOptions{
		Timeout: 5 * time.Second, OnProgress: func(p sb.Progress) { progress = append(progress, p) }})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done after 300ms" {
		t.Fatalf("slow: %+v, %v", res, err)
	}
	if len(progress) != 3 || progress[2].Progress != 3 || progress[2].Total != 3 {
		t.Fatalf("progress %+v, want 1/3, 2/3, 3/3", progress)
	}

	for _, tc := range []struct {
		name   string
		answer *sb.ElicitationResponse // nil: no OnElicitation
		want   string
	}{
		{"accepted", &sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": "yes"}}, "answer: yes"},
		{"declined", &sb.ElicitationResponse{Action: "decline"}, "declined"},
		{"without a callback", nil, "declined"},
	} {
		var asked []string
		o := client.CallOptions{OnProgress: func(sb.Progress) {}}
		if tc.answer != nil {
			o.OnElicitation = func(_ context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
				asked = append(asked, req.Message)
				return *tc.answer, nil
			}
		}
		res, err := c.Call(ctx, "tools/elicit", map[string]any{"message": "Ship it?"}, o)
		if err != nil || res.Content[0].(*mcp.TextContent).Text != tc.want {
			t.Errorf("%s: %+v, %v; want %q", tc.name, res, err, tc.want)
		}
		if tc.answer != nil && (len(asked) != 1 || asked[0] != "Ship it?") {
			t.Errorf("%s: asked %q", tc.name, asked)
		}
	}

	// An error of OnElicitation abandons the call, which the daemon
	// cancels: the server stays usable.
	boom := errors.New("no one to ask")
	_, err = c.Call(ctx, "tools/elicit", nil, client.CallOptions{
		OnElicitation: func(context.Context, sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			return sb.ElicitationResponse{}, boom
		}})
	if !errors.Is(err, boom) {
		t.Fatalf("an OnElicitation error: %v, want it returned", err)
	}

	// A failure of a streamed call is its error event: status 0.
	_, err = c.Call(ctx, "tools/sleep", map[string]any{"ms": 5000}, client.CallOptions{
		Timeout: 100 * time.Millisecond, OnProgress: func(sb.Progress) {}})
	wantCode(t, "a streamed timeout", err, 0, sb.CodeTimeout)
	if _, err := c.Call(ctx, "tools/echo", map[string]any{"text": "still here"}, client.CallOptions{}); err != nil {
		t.Fatalf("after the abandoned call: %v", err)
	}
}

func TestCallEndsWithTheContext(t *testing.T) {
	c := newDaemon(t)
	c.CreateServer(context.Background(), stdio(t, "tools"))
	waitConnected(t, c, "tools")
	for _, streamed := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		o := client.CallOptions{}
		if streamed {
			o.OnProgress = func(sb.Progress) {}
		}
		_, err := c.Call(ctx, "tools/sleep", map[string]any{"ms": 5000}, o)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("streamed %v: %v, want the context's error", streamed, err)
		}
	}
}

func TestEventsDeliverStatusChanges(t *testing.T) {
	c := newDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	c.CreateServer(ctx, stdio(t, "watched"))
	var seen []sb.Reason
	for !slices.Contains(seen, sb.ReasonConnected) {
		ev, err := events.Next()
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		if ev.Server == "watched" {
			seen = append(seen, ev.Reason)
		}
	}
	if seen[0] != sb.ReasonCreated {
		t.Errorf("events %v, want created first", seen)
	}
	cancel()
	if _, err := events.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after the context ended: %v", err)
	}
}

func TestHealthMetricsAndMCP(t *testing.T) {
	c := newDaemon(t)
	ctx := context.Background()
	c.CreateServer(ctx, stdio(t, "m1"))
	waitConnected(t, c, "m1")
	if err := c.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}
	if _, err := c.Call(ctx, "m1/echo", map[string]any{"text": "x"}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	body, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(body, `switchboard_calls_total{outcome="ok",server="m1"} 1`) {
		t.Fatalf("metrics: %v\n%s", err, body)
	}
	if n, ok := client.MetricValue(body, "go_goroutines"); !ok || n < 1 {
		t.Errorf("go_goroutines in the metrics: %v, %v", n, ok)
	}
	if _, ok := client.MetricValue(body, "switchboard_calls_total"); ok {
		t.Error("MetricValue read a labelled metric as unlabelled")
	}

	sess, err := mcp.NewClient(&mcp.Implementation{Name: "client-test"}, nil).Connect(ctx, c.MCPTransport(), nil)
	if err != nil {
		t.Fatalf("connecting to /mcp: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "m1__echo", Arguments: map[string]any{"text": "through mcp"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "through mcp" {
		t.Fatalf("a call through /mcp: %+v, %v", res, err)
	}
}

func TestErrorsOfTheAPIAndOfOthers(t *testing.T) {
	c := newDaemon(t)
	wrong, err := client.New(c.BaseURL(), "wrong", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.Servers(context.Background())
	wantCode(t, "a wrong token", err, http.StatusUnauthorized, sb.CodeUnauthorized)
	if err := wrong.Health(context.Background()); err != nil {
		t.Errorf("health needs no token: %v", err)
	}

	// Something that is not the API: a proxy's error page, a 401 without
	// a body.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/tools" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Error(w, "<html>bad gateway\nmore</html>", http.StatusBadGateway)
	}))
	defer proxy.Close()
	p, _ := client.New(proxy.URL, "", nil)
	defer p.Close()
	_, err = p.Servers(context.Background())
	if ce := wantCode(t, "a proxy's 502", err, http.StatusBadGateway, sb.HTTPStatus(502)); !strings.Contains(ce.Message, "HTTP 502 from "+proxy.URL+"/api/v1/servers: <html>bad gateway") {
		t.Errorf("message %q", ce.Message)
	}
	_, err = p.Tools(context.Background())
	wantCode(t, "a bare 401", err, http.StatusUnauthorized, sb.CodeUnauthorized)
}

func TestAnUnreachableDaemonIsNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New(addr, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Servers(context.Background())
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "cannot reach switchboard at http://"+addr) {
		t.Fatalf("err = %v, want a refused connection to http://%s", err, addr)
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		t.Errorf("an unreachable daemon is an API error: %#v", ce)
	}
}

func TestNewNormalizesTheAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7420":            "http://127.0.0.1:7420",
		"http://127.0.0.1:7420/":    "http://127.0.0.1:7420",
		"https://sb.example.com/sb": "https://sb.example.com/sb",
		"localhost:80":              "http://localhost:80",
	} {
		if c, err := client.New(in, "", nil); err != nil || c.BaseURL() != want {
			t.Errorf("New(%q): %v, %v; want %q", in, c, err, want)
		}
	}
	for _, in := range []string{"", " ", "ftp://x", "http://", "http://u:p@h:1", "http://h:1/?q=1"} {
		if c, err := client.New(in, "", nil); err == nil {
			t.Errorf("New(%q) = %s, want an error", in, c.BaseURL())
		}
	}
}

func TestEnvNamesTheDaemon(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no credential file
	t.Setenv(client.EnvAddr, "")
	t.Setenv(client.EnvToken, "")
	if addr, tok := client.Env(); addr != client.DefaultAddr || tok != "" {
		t.Errorf("Env() without variables = %q, %q", addr, tok)
	}
	t.Setenv(client.EnvAddr, "10.0.0.1:9")
	t.Setenv(client.EnvToken, "tok")
	if addr, tok := client.Env(); addr != "10.0.0.1:9" || tok != "tok" {
		t.Errorf("Env() = %q, %q", addr, tok)
	}
}

// ExampleClient_Call calls a tool with a progress callback.
func ExampleClient_Call() {
	addr, token := client.Env()
	c, err := client.New(addr, token, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.Call(context.Background(), "everything/echo", map[string]any{"message": "hi"}, client.CallOptions{
		Timeout:    30 * time.Second,
		OnProgress: func(p sb.Progress) { fmt.Printf("%v/%v %s\n", p.Progress, p.Total, p.Message) },
	})
	if err != nil {
		fmt.Println(sb.CodeOf(err), err)
		return
	}
	fmt.Println(res.Content)
}
