package httpapi_test

// Security, end to end against the real API (with the MCP endpoint mounted)
// and real test-server processes: the bearer token, secrets in no response,
// log line, metric or error, stdio without a shell, the SQLite file's mode,
// DNS-rebinding and cross-origin protection, and what `switchboard serve`
// binds and warns about.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/sse"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/stats"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

type secOptions struct {
	token          string
	credentialFile string
	allowedHosts   []string
	session        upstream.Options
	audit          *audit.Log
}

// secEnv is the API as serve builds it (registry over SQLite, metrics,
// executor, gateway mounted at /mcp) on 127.0.0.1, with every log line
// captured.
type secEnv struct {
	t     *testing.T
	h     http.Handler // the API's handler, for requests made without a listener
	url   string
	token string
	c     *client.Client // of url, with token
	reg   *registry.Registry
	logs  *testserver.Buffer
}

func newSecEnv(t *testing.T, o secOptions) *secEnv {
	t.Helper()
	logs := &testserver.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := o.session
	if sess.HealthInterval == 0 {
		sess.HealthInterval = 200 * time.Millisecond
	}
	if sess.ProbeTimeout == 0 {
		sess.ProbeTimeout = time.Second
	}
	reg := registrytest.New(t, &registry.Options{Logger: log, Session: sess})
	m := metrics.New(reg)
	series := stats.New(nil)
	ex := executor.New(m.Instrument(series.Instrument(executor.NewMCP(reg))))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: log, Version: "test"})
	h := httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Stats: series, Token: o.token, CredentialFile: o.credentialFile,
		AllowedHosts: o.allowedHosts, Logger: log, MCP: gw.Handler(), Audit: o.audit})
	srv := httptest.NewServer(h)
	c, err := client.New(srv.URL, o.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	return &secEnv{t: t, h: h, url: srv.URL, token: o.token, c: c, reg: reg, logs: logs}
}

// do sends a request (body: nil, a string sent as is, or a value sent as
// JSON) with the env's token and returns the status, header and body.
func (e *secEnv) do(method, path string, body any, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

func (e *secEnv) mustCreate(cfg map[string]any) {
	e.t.Helper()
	if st, _, body := e.do("POST", "/api/v1/servers", cfg); st != http.StatusCreated {
		e.t.Fatalf("creating %v: %d %s", cfg["name"], st, body)
	}
}

func (e *secEnv) view(name string) sb.ServerView {
	e.t.Helper()
	v, err := e.c.Server(context.Background(), name)
	if err != nil {
		e.t.Fatalf("GET %s: %v", name, err)
	}
	return v
}

func (e *secEnv) waitFor(name, what string, pred func(sb.RuntimeInfo) bool) sb.ServerView {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := e.view(name)
		if pred(v.Runtime) {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: no %s within 20 s: %+v", name, what, v.Runtime)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *secEnv) waitStatus(name string, want sb.Status) sb.ServerView {
	e.t.Helper()
	return e.waitFor(name, "status "+string(want), func(r sb.RuntimeInfo) bool { return r.Status == want })
}

// secEvent is one server-sent event as sent: its name and data.
type secEvent struct{ name, data string }

// streamCall posts a streamed call and returns its events.
func (e *secEnv) streamCall(body string) []secEvent {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url+"/api/v1/call", strings.NewReader(body))
	req.Header.Set("Accept", "text/event-stream")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	return readSecEvents(resp.Body)
}

// readSecEvents reads every event of a stream until it ends.
func readSecEvents(r io.Reader) []secEvent {
	var out []secEvent
	events := sse.NewReader(r)
	for {
		ev, err := events.Next()
		if err != nil {
			return out
		}
		out = append(out, secEvent{ev.Name, string(ev.Data)})
	}
}

// connectMCP opens a go-sdk client session to path, sending the env's token.
func (e *secEnv) connectMCP(path string) *mcp.ClientSession {
	e.t.Helper()
	tr := e.c.MCPTransport()
	tr.Endpoint = e.url + path
	c := mcp.NewClient(&mcp.Implementation{Name: "security-test"}, nil)
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("connecting to %s: %v", path, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func secStdio(t *testing.T, name string, args ...string) map[string]any {
	return map[string]any{"name": name, "transport": "stdio", "command": testserver.Binary(t), "args": args,
		"protocol_version": "2025-11-25"}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`

// TestTokenIsRequiredAndRefusalsTellNothing: with a token, every route but
// /healthz (the API, /metrics, the event stream and the MCP endpoint)
// answers 401 without it or with any wrong one, whatever its length, and
// the refusal is the same fixed body: no token, no server name, no config.
// The comparison itself is of SHA-256 digests with
// subtle.ConstantTimeCompare (httpapi/api.go), so neither the token's
// content nor its length changes the work done; this test checks the
// behaviour that design promises, not timing.
func TestTokenIsRequiredAndRefusalsTellNothing(t *testing.T) {
	token := "tok-" + randomHex(16)
	e := newSecEnv(t, secOptions{token: token})
	srv := secStdio(t, "confidential-server")
	srv["env"] = map[string]string{"API_KEY": "env-secret-" + randomHex(8)}
	e.mustCreate(srv)
	e.waitStatus("confidential-server", sb.StatusConnected)
	secretEnv := srv["env"].(map[string]string)["API_KEY"]

	routes := []struct{ method, path, body string }{
		{"GET", "/api/v1/servers", ""},
		{"GET", "/api/v1/servers/confidential-server", ""},
		{"GET", "/api/v1/servers/no-such-server", ""},
		{"PUT", "/api/v1/servers/confidential-server", `{"name":"confidential-server","transport":"stdio","command":"x"}`},
		{"DELETE", "/api/v1/servers/confidential-server", ""},
		{"POST", "/api/v1/servers/confidential-server/test", ""},
		{"GET", "/api/v1/servers/confidential-server/logs", ""},
		{"GET", "/api/v1/servers/confidential-server/stats", ""},
		{"GET", "/api/v1/stats", ""},
		{"GET", "/api/v1/tools", ""},
		{"POST", "/api/v1/call", `{"tool":"confidential-server/echo","arguments":{"text":"x"}}`},
		{"POST", "/api/v1/test", `{"name":"t","transport":"stdio","command":"x"}`},
		{"GET", "/api/v1/events", ""},
		{"GET", "/metrics", ""},
		{"GET", "/api/v1/nothing-here", ""},
		{"POST", "/mcp", mcpInitialize},
		{"GET", "/mcp", ""},
		{"POST", "/mcp/confidential-server", mcpInitialize},
		{"POST", "/mcp/no-such-server", mcpInitialize},
	}
	auths := []string{
		"",                               // none
		"Bearer ",                        // empty token
		"Bearer x",                       // short
		"Bearer " + token[:len(token)-1], // a prefix
		"Bearer " + token + "x",          // an extension
		"Bearer " + strings.Repeat("a", len(token)), // same length
		"Bearer " + strings.ToUpper(token),          // case
		"Bearer " + strings.Repeat("z", 8192),       // long
		"Bearer  " + token,                          // two spaces
		"Basic " + token,                            // other scheme
		token,                                       // no scheme
	}
	var first string
	for _, rt := range routes {
		for _, auth := range auths {
			var body io.Reader
			if rt.body != "" {
				body = strings.NewReader(rt.body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, rt.method, e.url+rt.path, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			what := fmt.Sprintf("%s %s with %.20q", rt.method, rt.path, auth)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %d %s %s, want 401 with WWW-Authenticate, as JSON", what, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
				continue
			}
			if first == "" {
				first = string(raw)
			}
			if string(raw) != first {
				t.Errorf("%s: the refusal differs: %s, first was %s", what, raw, first)
			}
			all := string(raw) + fmt.Sprint(resp.Header)
			for _, leak := range []string{token, token[4:12], "confidential", "no-such-server", secretEnv, testserver.Binary(t), "echo", "testserver"} {
				if strings.Contains(all, leak) {
					t.Errorf("%s: the refusal contains %q: %s %v", what, leak, raw, resp.Header)
				}
			}
		}
	}
	var eb api.ErrorBody
	if err := json.Unmarshal([]byte(first), &eb); err != nil || eb.Error.Code != "unauthorized" {
		t.Errorf("the refusal is not a JSON error: %s", first)
	}

	// Nothing the refused requests asked for happened, and the right token
	// opens every door.
	if v := e.view("confidential-server"); v.Version != 1 || v.Command != testserver.Binary(t) {
		t.Fatalf("a refused request changed the server: %+v", v)
	}
	resp, err := http.Get(e.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz needs no token: %v %v", err, resp)
	}
	resp.Body.Close()
	if st, _, body := e.do("GET", "/metrics", nil); st != 200 || !strings.Contains(body, "switchboard_server_status") {
		t.Fatalf("metrics with the token: %d", st)
	}
	cs := e.connectMCP("/mcp")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confidential-server__echo", Arguments: map[string]any{"text": "through /mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("a call through /mcp with the token: %v %+v", err, res)
	}
	one := e.connectMCP("/mcp/confidential-server")
	if _, err := one.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("a call through /mcp/NAME with the token: %v", err)
	}
}

// TestNoSecretAnywhere configures a stdio server with secret env values and
// a remote one (pointing at a test server that answers 401, with secret
// headers and credentials in its URL), exercises every route, the event
// stream, /metrics and the MCP endpoint, and checks that no secret appears
// in any response, event, log line, metric or error message. URL
// credentials are allowed in one place only: the "url" field of the
// remote server's own config, which a client must be able to read back and
// edit; every message that mentions the URL masks them.
func TestNoSecretAnywhere(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	envSecret, envSecret2 := "env-secret-"+randomHex(8), "another-env-secret-"+randomHex(8)
	hdrSecret, hdrSecret2 := "hdr-secret-"+randomHex(8), "api-key-hdr-"+randomHex(8)
	urlPass, urlKey := "pa55-"+randomHex(6), "k3y-"+randomHex(6)
	secrets := []string{envSecret, envSecret2, hdrSecret, hdrSecret2, urlPass, urlKey}

	var got []string // every response body, event and message seen
	record := func(what string, status int, _ http.Header, body string) {
		got = append(got, fmt.Sprintf("== %s (%d)\n%s", what, status, body))
	}

	// The event stream, from before the first server until the end.
	ctx, stopEvents := context.WithCancel(context.Background())
	defer stopEvents()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/api/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var events []secEvent
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		events = readSecEvents(resp.Body)
	}()
	streamStart := time.Now()

	bad := testserver.StartHTTP(t, "-status", "401")
	remoteURL := strings.Replace(bad.URL, "http://", "http://alice:"+urlPass+"@", 1) + "?api_key=" + urlKey + "&x=1"
	s1 := secStdio(t, "s1")
	s1["env"] = map[string]string{"API_KEY": envSecret, "OTHER_TOKEN": envSecret2}
	r1 := map[string]any{"name": "r1", "transport": "streamable-http", "url": remoteURL,
		"headers": map[string]string{"Authorization": "Bearer " + hdrSecret, "X-Api-Key": hdrSecret2},
		"retry":   map[string]any{"max_attempts": 1}}
	a := func(what, method, path string, body any, hdr ...string) {
		t.Helper()
		st, h, b := e.do(method, path, body, hdr...)
		record(what, st, h, b)
	}
	a("create s1", "POST", "/api/v1/servers", s1)
	a("create r1", "POST", "/api/v1/servers", r1)
	e.waitStatus("s1", sb.StatusConnected)
	rv := e.waitStatus("r1", sb.StatusError)
	if rv.Runtime.Error == nil || rv.Runtime.Error.Phase != sb.PhaseAuth || rv.Runtime.Error.Code != "http_401" {
		t.Fatalf("r1 runtime %+v, want an auth error", rv.Runtime)
	}
	// URL credentials are masked in the message, which still names the URL.
	if msg := rv.Runtime.Error.Message; !strings.Contains(msg, "http://***@127.0.0.1") || !strings.Contains(msg, "api_key=***") {
		t.Errorf("r1's error does not show the masked URL: %q", msg)
	}

	a("list", "GET", "/api/v1/servers", nil)
	a("get s1", "GET", "/api/v1/servers/s1", nil)
	a("get r1", "GET", "/api/v1/servers/r1", nil)
	upd := secStdio(t, "s1")
	upd["env"] = map[string]string{"API_KEY": "***", "OTHER_TOKEN": "***"}
	upd["call_timeout_ms"] = 5000
	a("update s1 with ***", "PUT", "/api/v1/servers/s1", upd)
	rupd := map[string]any{"name": "r1", "transport": "streamable-http", "url": remoteURL,
		"headers": map[string]string{"Authorization": "***", "X-Api-Key": "***"},
		"retry":   map[string]any{"max_attempts": 1}, "call_timeout_ms": 4000}
	a("update r1 with ***", "PUT", "/api/v1/servers/r1", rupd, "If-Match", "1")
	a("test s1", "POST", "/api/v1/servers/s1/test", nil)
	a("test r1", "POST", "/api/v1/servers/r1/test", nil)
	a("draft test r1 with ***", "POST", "/api/v1/test", rupd)
	a("draft test with plain secrets", "POST", "/api/v1/test", map[string]any{"name": "draft", "transport": "streamable-http", "url": remoteURL,
		"headers": map[string]string{"Authorization": "Bearer " + hdrSecret}})
	a("draft test stdio", "POST", "/api/v1/test", s1)
	a("draft test missing command", "POST", "/api/v1/test", map[string]any{"name": "m", "transport": "stdio", "command": "switchboard-no-such-" + envSecret, "env": map[string]string{"K": envSecret}})
	a("tools s1", "GET", "/api/v1/servers/s1/tools", nil)
	a("tools r1", "GET", "/api/v1/servers/r1/tools", nil)
	a("all tools", "GET", "/api/v1/tools", nil)
	a("logs s1", "GET", "/api/v1/servers/s1/logs", nil)
	a("logs r1", "GET", "/api/v1/servers/r1/logs", nil)
	a("call s1/echo", "POST", "/api/v1/call", map[string]any{"tool": "s1/echo", "arguments": map[string]any{"text": "hello"}})
	a("call s1/fail", "POST", "/api/v1/call", map[string]any{"tool": "s1/fail", "arguments": map[string]any{"message": "boom"}})
	a("call s1 bad args", "POST", "/api/v1/call", map[string]any{"tool": "s1/add", "arguments": map[string]any{"a": "x"}})
	a("call s1 unknown tool", "POST", "/api/v1/call", map[string]any{"tool": "s1/nope"})
	a("call s1 timeout", "POST", "/api/v1/call", map[string]any{"tool": "s1/sleep", "arguments": map[string]any{"ms": 2000}, "options": map[string]any{"timeout_ms": 50}})
	a("call r1", "POST", "/api/v1/call", map[string]any{"tool": "r1/echo", "arguments": map[string]any{"text": "x"}})
	a("call unknown server", "POST", "/api/v1/call", map[string]any{"tool": "r2/echo"})
	for _, ev := range e.streamCall(`{"tool":"r1/echo","arguments":{"text":"x"}}`) {
		record("streamed call r1: "+ev.name, 200, nil, ev.data)
	}
	for _, ev := range e.streamCall(`{"tool":"s1/slow","arguments":{"duration_ms":100,"interval_ms":50}}`) {
		record("streamed call s1: "+ev.name, 200, nil, ev.data)
	}
	a("restart r1", "POST", "/api/v1/servers/r1/restart", nil)
	a("disable r1", "POST", "/api/v1/servers/r1/disable", nil)
	a("enable r1", "POST", "/api/v1/servers/r1/enable", nil)
	e.waitStatus("r1", sb.StatusError)
	a("metrics", "GET", "/metrics", nil)

	// The MCP endpoint: the aggregate and one server.
	cs := e.connectMCP("/mcp")
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tool)
		record("mcp tool", 200, nil, string(b))
	}
	for _, name := range []string{"s1__echo", "s1__fail", "r1__echo"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x", "message": "m"}})
		b, _ := json.Marshal(res)
		record("mcp call "+name, 200, nil, fmt.Sprint(string(b), err))
	}
	if _, err := e.reg.Get("r1"); err == nil {
		c := mcp.NewClient(&mcp.Implementation{Name: "security-test"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp/r1"}, nil)
		record("mcp /mcp/r1 connect", 0, nil, fmt.Sprint(err))
		if err == nil {
			cs.Close()
		}
	}

	// The stream ran for at least a second.
	if d := time.Second - time.Since(streamStart); d > 0 {
		time.Sleep(d)
	}
	stopEvents()
	<-eventsDone
	resp.Body.Close()
	if len(events) == 0 {
		t.Fatal("no status events")
	}
	for _, ev := range events {
		record("event "+ev.name, 200, nil, ev.data)
	}

	everything := strings.Join(got, "\n")
	// The remote server's URL field shows its credentials masked.
	urlField := `"url":"` + sb.MaskURL(remoteURL) + `"`
	scrubbed := everything
	logs := e.logs.String()
	for _, s := range secrets {
		if strings.Contains(scrubbed, s) {
			t.Errorf("secret %q appears in a response, event or error:\n%s", s, context40(scrubbed, s))
		}
		if strings.Contains(logs, s) {
			t.Errorf("secret %q appears in a log line:\n%s", s, context40(logs, s))
		}
	}
	for _, want := range []string{`"API_KEY":"***"`, `"OTHER_TOKEN":"***"`, `"Authorization":"***"`, `"X-Api-Key":"***"`, "http://***@127.0.0.1", "api_key=***"} {
		if !strings.Contains(scrubbed, want) {
			t.Errorf("%s is missing from the responses", want)
		}
	}
	if !strings.Contains(everything, urlField) {
		t.Errorf("the remote server's URL is not shown, masked, as %s", urlField)
	}
	if t.Failed() {
		t.Logf("everything seen:\n%s", scrubbed)
	}
}

// context40 shows s in text with 40 characters either side.
func context40(text, s string) string {
	i := strings.Index(text, s)
	return text[max(0, i-200):min(len(text), i+len(s)+200)]
}

// TestStdioCommandsRunWithoutAShell: a command line with shell syntax is a
// command name, not a script: it fails as "command not found" in phase
// spawn, and nothing it "says" happens. Arguments reach the server
// literally, without expansion.
func TestStdioCommandsRunWithoutAShell(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	dir := t.TempDir()
	marker := func(n string) string { return filepath.Join(dir, n) }
	commands := []map[string]any{
		{"command": "echo hi; touch " + marker("semicolon")},
		{"command": "$(touch " + marker("subst") + ")"},
		{"command": "`touch " + marker("backtick") + "`"},
		{"command": "true && touch " + marker("and")},
		{"command": "echo hi | tee " + marker("pipe")},
		{"command": "sh -c 'touch " + marker("sh") + "'"},
		{"command": "touch relative", "cwd": dir},
		{"command": "echo > " + marker("redirect")},
	}
	for i, c := range commands {
		draft := map[string]any{"name": fmt.Sprintf("shell-%d", i), "transport": "stdio"}
		for k, v := range c {
			draft[k] = v
		}
		var res api.TestResult
		st, _, body := e.do("POST", "/api/v1/test", draft)
		json.Unmarshal([]byte(body), &res)
		if st != 200 || res.Runtime.Error == nil || res.Runtime.Error.Phase != sb.PhaseSpawn || res.Runtime.Error.Code != "command_not_found" {
			t.Errorf("draft %q: %d %s, want command_not_found in phase spawn", c["command"], st, body)
		}
		// Stored and started, too.
		e.mustCreate(draft)
		v := e.waitStatus(draft["name"].(string), sb.StatusError)
		if v.Runtime.Error == nil || v.Runtime.Error.Phase != sb.PhaseSpawn || v.Runtime.Error.Code != "command_not_found" {
			t.Errorf("server %q: %+v, want command_not_found in phase spawn", c["command"], v.Runtime.Error)
		}
	}
	// Arguments and env values are not expanded either.
	literal := "$(touch " + marker("arg") + ")`touch " + marker("arg2") + "`$HOME;id"
	srv := secStdio(t, "literal", "-name", literal)
	srv["env"] = map[string]string{"EXPANDED": "$(touch " + marker("env") + ")"}
	e.mustCreate(srv)
	v := e.waitStatus("literal", sb.StatusConnected)
	if v.Runtime.ServerInfo == nil || v.Runtime.ServerInfo.Name != literal {
		t.Errorf("the server got %+v, want the argument literally: %q", v.Runtime.ServerInfo, literal)
	}
	time.Sleep(200 * time.Millisecond)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		t.Errorf("a shell ran: %s was created", en.Name())
	}
}

// TestSQLiteFileIsPrivate: under umask 022, the database and its WAL and
// shared-memory files are created with mode 0600: they hold the secrets.
func TestSQLiteFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "private.db")
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), &sb.ServerConfig{Name: "p", Transport: sb.TransportStdio, Command: "x",
		Env: map[string]string{"K": "secret"}}); err != nil {
		t.Fatal(err)
	}
	check := func() {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if os.IsNotExist(err) && p != path {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if mode := fi.Mode().Perm(); mode != 0o600 {
				t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), mode)
			}
		}
	}
	check()
	st.Close()
	// Opened again, as serve does at every start.
	st, err = store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	check()
	st.Close()
}

// TestMCPRefusesDNSRebindingAndCrossOrigin: a request to the MCP endpoint
// arriving on 127.0.0.1 with a foreign Host (DNS rebinding), or a browser's
// cross-origin request, gets 403; the same request with a local Host or
// from the same origin is served.
func TestMCPRefusesDNSRebindingAndCrossOrigin(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	e.mustCreate(secStdio(t, "p"))
	e.waitStatus("p", sb.StatusConnected)
	local := strings.TrimPrefix(e.url, "http://")
	port := local[strings.LastIndexByte(local, ':')+1:]
	for _, tc := range []struct {
		what string
		hdr  []string
		want int
	}{
		{"local Host", nil, 200},
		{"localhost Host", []string{"Host", "localhost:" + port}, 200},
		{"foreign Host", []string{"Host", "evil.example"}, 403},
		{"foreign Host with the port", []string{"Host", "evil.example:" + port}, 403},
		{"rebinding to a public address", []string{"Host", "203.0.113.9:" + port}, 403},
		{"cross-site browser request", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403},
		{"cross-origin without Sec-Fetch-Site", []string{"Origin", "https://evil.example"}, 403},
		{"same-origin browser request", []string{"Origin", e.url, "Sec-Fetch-Site", "same-origin"}, 200},
	} {
		for _, path := range []string{"/mcp", "/mcp/p"} {
			hdr := append([]string{"Accept", "application/json, text/event-stream"}, tc.hdr...)
			st, h, body := e.do("POST", path, mcpInitialize, hdr...)
			if id := h.Get("Mcp-Session-Id"); id != "" {
				// End the session the initialize opened.
				e.do("DELETE", path, nil, "Mcp-Session-Id", id)
			}
			if st != tc.want {
				t.Errorf("%s, %s: %d %.200s, want %d", tc.what, path, st, body, tc.want)
			}
			if st == 403 && (strings.Contains(body, "testserver") || strings.Contains(body, `"p"`)) {
				t.Errorf("%s, %s: the refusal tells about the servers: %s", tc.what, path, body)
			}
		}
	}
}

// TestAPIRefusesDNSRebindingAndCrossOrigin: the REST API can do everything
// /mcp can and more (create a stdio server = run a command), so a
// rebinding Host or a cross-site browser request must be refused there
// too. A cross-site "simple" POST (Content-Type text/plain, no preflight)
// must not create a server.
func TestAPIRefusesDNSRebindingAndCrossOrigin(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	dir := t.TempDir()
	for i, hdr := range [][]string{
		{"Host", "evil.example"},
		{"Content-Type", "text/plain", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Content-Type", "text/plain", "Origin", "https://evil.example"},
	} {
		name := fmt.Sprintf("csrf-%d", i)
		cfg := map[string]any{"name": name, "transport": "stdio", "command": "/bin/sh", "args": []string{"-c", "touch " + filepath.Join(dir, name)}}
		st, _, body := e.do("POST", "/api/v1/servers", cfg, hdr...)
		if st != http.StatusForbidden {
			t.Errorf("POST /api/v1/servers with %q: %d %.200s, want 403", hdr, st, body)
		}
		if st, _, _ := e.do("GET", "/api/v1/servers", nil, hdr...); st != http.StatusForbidden && hdr[0] == "Host" {
			t.Errorf("GET /api/v1/servers with %q: %d, want 403", hdr, st)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a cross-site or rebinding request ran a command: %v", entries)
	}
}

// The warnings of serve without a credential (--insecure-no-auth).
const (
	nonLoopbackWarning = "anyone who can reach it can run any command"
	loopbackWarning    = "any local user can run any command"
)

// TestServeBindsLoopbackByDefaultAndWarnsElsewhere: the default --listen
// is 127.0.0.1:7420; every listener requires a credential unless
// --insecure-no-auth, with which serve warns on stderr (before it serves)
// who can now run any command: anyone who can reach a non-loopback
// listener, any local user on loopback. With a token or its generated
// credential it does not warn, and it never prints either. The daemon
// bound to 0.0.0.0 is only ever contacted through 127.0.0.1.
func TestServeBindsLoopbackByDefaultAndWarnsElsewhere(t *testing.T) {
	// Built into the test's TempDir: this package's TestMain does not
	// remove daemontest's shared binary.
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	help := exec.Command(bin, "serve", "--help")
	help.Env = daemontest.Environ()
	out, err := help.CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`--listen string\s+address to listen on \(env SWITCHBOARD_LISTEN\) \(default "127\.0\.0\.1:7420"\)`).Match(out) {
		t.Errorf("serve --help does not show the loopback default:\n%s", out)
	}

	token := "serve-token-" + randomHex(8)
	for _, tc := range []struct {
		name          string
		listen, token string
		noAuth        bool
		warn          string
	}{
		{"all interfaces with the generated credential", "0.0.0.0:0", "", false, ""},
		{"all interfaces with a token", "0.0.0.0:0", token, false, ""},
		{"all interfaces without a credential", "0.0.0.0:0", "", true, nonLoopbackWarning},
		{"loopback with the generated credential", "127.0.0.1:0", "", false, ""},
		{"loopback without a credential", "127.0.0.1:0", "", true, loopbackWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "serve.db")
			d := daemontest.Start(t, daemontest.Options{Binary: bin, DB: "sqlite:" + db, Listen: tc.listen, Token: tc.token, NoAuth: tc.noAuth})
			lines := d.Logs()
			for _, w := range []string{nonLoopbackWarning, loopbackWarning} {
				if warned := strings.Contains(lines, w); warned != (w == tc.warn) {
					t.Errorf("warning %q printed: %v, want %v; stderr:\n%s", w, warned, w == tc.warn, lines)
				}
			}
			for l := range strings.Lines(lines) {
				if tc.warn != "" && strings.Contains(l, tc.warn) && (!strings.Contains(l, "level=WARN") || !strings.Contains(l, "--insecure-no-auth")) {
					t.Errorf("the warning is not at level WARN, or does not name the flag: %s", l)
				}
			}
			if !strings.HasPrefix(d.URL, "http://127.0.0.1:") {
				t.Fatalf("the daemon is reached at %s, not over 127.0.0.1", d.URL)
			}
			resp, err := http.Get(d.URL + "/healthz")
			if err != nil {
				t.Fatalf("healthz over 127.0.0.1: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz: %d", resp.StatusCode)
			}
			resp, err = http.Get(d.URL + "/api/v1/servers")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[bool]int{true: 200, false: 401}[tc.noAuth]; resp.StatusCode != want {
				t.Errorf("GET /api/v1/servers without a credential: %d, want %d", resp.StatusCode, want)
			}
			if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("serve's database: %v %v, want mode 0600", fi.Mode(), err)
			}
			if err := d.Stop(); err != nil {
				t.Errorf("serve (%s): %v", tc.name, err)
			}
			if all := d.Logs(); d.Token != "" && strings.Contains(all, d.Token) {
				t.Errorf("serve printed its credential:\n%s", all)
			}
		})
	}
}
