package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/otlptest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
	"github.com/switchboard-mcp/switchboard/telemetry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// headerTransport adds fixed headers to every request of a client.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// tracing turns tracing on for the test, exporting to a receiver of its
// own, and returns the receiver and the function that flushes the spans.
func tracing(t *testing.T) (*otlptest.Receiver, func()) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	shutdown, on, err := telemetry.Setup(context.Background(), os.Getenv, "test", nil)
	if err != nil || !on {
		t.Fatalf("telemetry.Setup: on %v, err %v", on, err)
	}
	t.Cleanup(func() { shutdown(context.Background()) })
	return rcv, func() {
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// spanNamed returns the span of spans named name, failing the test if
// there is not exactly one.
func spanNamed(t *testing.T, spans []otlptest.Span, name string) otlptest.Span {
	t.Helper()
	var found []otlptest.Span
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q among %v", len(found), name, names)
	}
	return found[0]
}

// wantAttrs checks the attributes of a span.
func wantAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.Attrs[k] != v {
			t.Errorf("span %q: %s = %q, want %q (attributes %v)", s.Name, k, s.Attrs[k], v, s.Attrs)
		}
	}
}

// TestTraceCrossesTheGateway: a client's trace, sent in the traceparent
// header or in params._meta, continues through /mcp into the upstream: the
// gateway's span of the request is the child of the client's, the
// upstream call's span the child of that, with the server, tool,
// transport, protocol version, principal and outcome; the remote server
// gets the upstream span's traceparent as a header, the stdio server in
// params._meta. The token's secret is in no span.
func TestTraceCrossesTheGateway(t *testing.T) {
	rcv, flush := tracing(t)
	const secret = "trace-test-secret"
	httpEvents := testserver.EventsFile(t)
	httpSrv := testserver.StartHTTP(t, "-name", "remote-one", "-events", httpEvents)
	// The stdio server runs sandboxed, as serve runs it, writing its
	// events to a directory of the test's mounted into its sandbox.
	rt := sandboxtest.Runtime(t)
	data := t.TempDir()
	sandboxtest.GiveToServers(t, rt, data)
	stdioEvents := filepath.Join(data, "events.jsonl")
	local := stdio(t, "local", "-events", "/data/events.jsonl")
	local.Sandbox = &sb.SandboxConfig{Enabled: new(true), Mounts: []sb.Mount{{Host: data, Path: "/data", Mode: sb.MountReadWrite}}}
	e := newEnvRegistry(t, secret, registry.Options{Session: upstream.Options{Sandbox: rt}}, gateway.Options{ResyncInterval: time.Second},
		local, &sb.ServerConfig{Name: "remote", Transport: sb.TransportStreamableHTTP, URL: httpSrv.URL})

	const (
		headerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		headerSpan  = "00f067aa0ba902b7"
		metaTrace   = "0af7651916cd43dd8448eb211c80319c"
		metaSpan    = "b7ad6b7169203331"
	)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+secret)
	h.Set("traceparent", "00-"+headerTrace+"-"+headerSpan+"-01")
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{h}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "local__echo", "remote__echo")

	relayed := gateway.RelayServed(e.gw)
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remote__echo", Arguments: map[string]any{"text": "a"}})); got != "a" {
		t.Fatalf("remote__echo answered %q", got)
	}
	// _meta's trace context comes before the header's.
	params := &mcp.CallToolParams{Name: "local__echo", Arguments: map[string]any{"text": "b"},
		Meta: mcp.Meta{"traceparent": "00-" + metaTrace + "-" + metaSpan + "-01", "tracestate": "vendor=1"}}
	if got := text(t)(cs.CallTool(context.Background(), params)); got != "b" {
		t.Fatalf("local__echo answered %q", got)
	}
	if v, err := e.reg.Get("local"); err != nil || v.Runtime.Sandbox == nil || !v.Runtime.Sandbox.Enabled {
		t.Fatalf("the stdio server runs unsandboxed: %v %+v", err, v.Runtime.Sandbox)
	}
	if n := gateway.RelayServed(e.gw) - relayed; n != 2 {
		t.Fatalf("the relay served %d of the 2 calls", n)
	}
	// A request the go-sdk's server answers gets its span too.
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "remote__greet", Arguments: map[string]string{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	// An API call continues the client's trace too.
	const apiTrace, apiSpan = "11112222333344445555666677778888", "1234123412341234"
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/v1/call", strings.NewReader(`{"tool":"local/slow","arguments":{"duration_ms":30,"interval_ms":5}}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream") // progress, through the Flusher of the span's writer
	req.Header.Set("traceparent", "00-"+apiTrace+"-"+apiSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/call: %s", resp.Status)
	}
	cs.Close()
	flush()

	check := func(traceID, clientSpan, server, tool, transport string) otlptest.Span {
		t.Helper()
		spans := rcv.Trace(traceID)
		in := spanNamed(t, spans, "tools/call "+server+"__"+tool)
		if in.ParentID != clientSpan || in.Kind != "server" {
			t.Errorf("the gateway's span %+v is not a server span under the client's %s", in, clientSpan)
		}
		wantAttrs(t, in, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": server + "__" + tool,
			"switchboard.server": server, "switchboard.principal": sb.PrincipalAdmin, "switchboard.outcome": "ok",
			"mcp.protocol.version": "2025-11-25", "url.path": "/mcp"})
		if in.Attrs["mcp.session.id"] == "" {
			t.Errorf("the gateway's span has no session id: %v", in.Attrs)
		}
		out := spanNamed(t, spans, "tools/call "+tool)
		if out.ParentID != in.SpanID || out.Kind != "client" {
			t.Errorf("the upstream call's span %+v is not a client span under the gateway's %s", out, in.SpanID)
		}
		wantAttrs(t, out, map[string]string{"gen_ai.tool.name": tool, "switchboard.server": server,
			"switchboard.transport": transport, "mcp.protocol.version": "2025-11-25",
			"switchboard.principal": sb.PrincipalAdmin, "switchboard.outcome": "ok"})
		return out
	}
	remote := check(headerTrace, headerSpan, "remote", "echo", string(sb.TransportStreamableHTTP))
	localSpan := check(metaTrace, metaSpan, "local", "echo", string(sb.TransportStdio))

	call := func(path string) testserver.Event {
		t.Helper()
		for _, ev := range testserver.ReadEvents(t, path) {
			if ev.Event == "call" && ev.Tool == "echo" {
				return ev
			}
		}
		t.Fatalf("no call of echo in %s", path)
		return testserver.Event{}
	}
	if got, want := call(httpEvents).TraceparentHeader, "00-"+headerTrace+"-"+remote.SpanID+"-01"; got != want {
		t.Errorf("the HTTP server's traceparent header %q, want %q", got, want)
	}
	if got, want := call(stdioEvents).Traceparent, "00-"+metaTrace+"-"+localSpan.SpanID+"-01"; got != want {
		t.Errorf("the stdio server's _meta traceparent %q, want %q", got, want)
	}

	prompt := spanNamed(t, rcv.Trace(headerTrace), "prompts/get remote__greet")
	if prompt.ParentID != headerSpan {
		t.Errorf("prompts/get span %+v", prompt)
	}
	wantAttrs(t, prompt, map[string]string{"mcp.method.name": "prompts/get", "switchboard.server": "remote", "switchboard.outcome": "ok"})
	if up := spanNamed(t, rcv.Trace(headerTrace), "prompts/get greet"); up.ParentID != prompt.SpanID || up.Kind != "client" ||
		up.Attrs["switchboard.server"] != "remote" || up.Attrs["switchboard.outcome"] != "ok" {
		t.Errorf("the upstream prompts/get span %+v is not a client span under %s", up, prompt.SpanID)
	}

	apiSpans := rcv.Trace(apiTrace)
	api := spanNamed(t, apiSpans, "POST /api/v1/call")
	if api.ParentID != apiSpan || api.Kind != "server" {
		t.Errorf("the API call's span %+v", api)
	}
	wantAttrs(t, api, map[string]string{"http.route": "POST /api/v1/call", "http.response.status_code": "200",
		"switchboard.principal": sb.PrincipalAdmin})
	slow := spanNamed(t, apiSpans, "tools/call slow")
	if slow.ParentID != api.SpanID {
		t.Errorf("the upstream call's span %+v is not under the API call's %s", slow, api.SpanID)
	}
	wantAttrs(t, slow, map[string]string{"switchboard.server": "local", "switchboard.outcome": "ok"})
	if slow.Attrs["switchboard.progress.count"] == "" || !slow.HasEvent("progress") {
		t.Errorf("the slow call's span counts no progress: %+v", slow)
	}

	for _, s := range rcv.Spans() {
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) {
				t.Errorf("span %q: %s holds the token's secret", s.Name, k)
			}
		}
	}
}

// TestTraceOfTimeoutsAttemptsAndStatelessCalls: a call whose request
// timeout fires has the timeout event naming its limit and the timeout
// outcome on both spans; each connection attempt is a root span with its
// outcome (ok, or the failure's code and phase); a stateless 2026-07-28
// call continues the trace of its _meta's traceparent.
func TestTraceOfTimeoutsAttemptsAndStatelessCalls(t *testing.T) {
	rcv, flush := tracing(t)
	local := stdio(t, "local")
	local.CallTimeoutMS = 100
	broken := &sb.ServerConfig{Name: "broken", Transport: sb.TransportStdio, Command: "/nonexistent/server"}
	e := newEnv(t, "", local, broken)
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "local__sleep")

	const sleepTrace, sleepSpan = "aaaabbbbccccddddeeeeffff00001111", "0102030405060708"
	params := &mcp.CallToolParams{Name: "local__sleep", Arguments: map[string]any{"ms": 60000},
		Meta: mcp.Meta{"traceparent": "00-" + sleepTrace + "-" + sleepSpan + "-01"}}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || !res.IsError {
		t.Fatalf("the sleep outlived its timeout: %v %+v", err, res)
	}

	const statelessTrace, statelessSpan = "99998888777766665555444433332222", "0a0b0c0d0e0f0001"
	a := send(t, statelessRequest(t, e.url+"/mcp", "local__echo", `{"text":"s"}`, plainCaps,
		`,"traceparent":"00-`+statelessTrace+`-`+statelessSpan+`-01"`))
	if a.status != http.StatusOK || a.result == "" {
		t.Fatalf("stateless call: %+v", a)
	}
	cs.Close()
	flush()

	spans := rcv.Trace(sleepTrace)
	in, out := spanNamed(t, spans, "tools/call local__sleep"), spanNamed(t, spans, "tools/call sleep")
	wantAttrs(t, in, map[string]string{"switchboard.outcome": "timeout", "switchboard.phase": "tool_call"})
	wantAttrs(t, out, map[string]string{"switchboard.outcome": "timeout", "error.type": "timeout", "switchboard.phase": "tool_call"})
	var limit string
	for _, ev := range out.Events {
		if ev.Name == "timeout" {
			limit = ev.Attrs["limit"]
		}
	}
	if limit != upstream.LimitRequest || !out.StatusError || !in.StatusError {
		t.Errorf("the upstream span's timeout event names limit %q, want %q; error status %v %v", limit, upstream.LimitRequest, out.StatusError, in.StatusError)
	}

	stateless := rcv.Trace(statelessTrace)
	sin := spanNamed(t, stateless, "tools/call local__echo")
	if sin.ParentID != statelessSpan || sin.Attrs["mcp.protocol.version"] != "2026-07-28" || sin.Attrs["mcp.session.id"] != "" {
		t.Errorf("the stateless call's span %+v", sin)
	}
	if sout := spanNamed(t, stateless, "tools/call echo"); sout.ParentID != sin.SpanID {
		t.Errorf("the stateless call's upstream span %+v", sout)
	}

	var ok, failed *otlptest.Span
	for _, s := range rcv.Spans() {
		switch {
		case s.Name == "connect local" && s.Attrs["switchboard.outcome"] == "ok":
			ok = &s
		case s.Name == "connect broken":
			failed = &s
		}
	}
	if ok == nil || failed == nil {
		t.Fatalf("attempt spans: connected %v, failed %v", ok, failed)
	}
	if ok.ParentID != "" || ok.Attrs["switchboard.transport"] != "stdio" || ok.Attrs["mcp.protocol.version"] != "2025-11-25" || !ok.HasEvent("initialized") {
		t.Errorf("the connected attempt's span %+v", *ok)
	}
	if failed.Attrs["switchboard.outcome"] == "" || failed.Attrs["switchboard.outcome"] == "ok" || failed.Attrs["switchboard.phase"] == "" || !failed.StatusError {
		t.Errorf("the failed attempt's span %+v", *failed)
	}
}

// TestTraceReachesALegacySSEUpstream: a call to a legacy HTTP+SSE server
// (2024-11-05) sends the upstream span's traceparent as an HTTP header of
// the POST that carries it, as to a Streamable HTTP server. The go-sdk's
// SSE server does not hand its handlers the POST's headers, so a proxy of
// the test's, on loopback in front of the server, keeps the header of
// each tools/call it passes on.
func TestTraceReachesALegacySSEUpstream(t *testing.T) {
	rcv, flush := tracing(t)
	httpSrv := testserver.StartHTTP(t, "-name", "legacy")
	target, err := url.Parse(httpSrv.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // the SSE stream's events as they come
	var mu sync.Mutex
	var callHeaders []string // the traceparent header of each tools/call POSTed
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var msg struct{ Method string }
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				mu.Lock()
				callHeaders = append(callHeaders, r.Header.Get("traceparent"))
				mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { front.CloseClientConnections(); front.Close() })

	e := newEnv(t, "", &sb.ServerConfig{Name: "legacy", Transport: sb.TransportSSE, URL: front.URL + "/sse"})
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "legacy__echo")
	const traceID, clientSpan = "cafebabecafebabecafebabecafebabe", "0badf00d0badf00d"
	params := &mcp.CallToolParams{Name: "legacy__echo", Arguments: map[string]any{"text": "old"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}}
	if got := text(t)(cs.CallTool(context.Background(), params)); got != "old" {
		t.Fatalf("legacy__echo answered %q", got)
	}
	cs.Close()
	flush()

	out := spanNamed(t, rcv.Trace(traceID), "tools/call echo")
	wantAttrs(t, out, map[string]string{"switchboard.server": "legacy", "switchboard.transport": string(sb.TransportSSE),
		"switchboard.outcome": "ok"})
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + traceID + "-" + out.SpanID + "-01"; len(callHeaders) != 1 || callHeaders[0] != want {
		t.Errorf("the SSE server's tools/call POSTs carried traceparent %q, want one %q", callHeaders, want)
	}
}

// TestCompletionHasAnUpstreamSpan: a completion/complete the gateway sends
// on to a server has a client span of its own (named by the server's own
// prompt name), under the span of the client's request, as prompts/get
// has. (The lists have none: the mirrors answer them, nothing is sent.)
func TestCompletionHasAnUpstreamSpan(t *testing.T) {
	rcv, flush := tracing(t)
	e := newEnv(t, "", stdio(t, "local"))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "local__echo")
	const traceID, clientSpan = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0", "0c0c0c0c0c0c0c0c"
	// The test server completes nothing: its error is the span's outcome.
	_, _ = cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "local__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}, Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}})
	cs.Close()
	flush()
	spans := rcv.Trace(traceID)
	in := spanNamed(t, spans, "completion/complete")
	up := spanNamed(t, spans, "completion/complete greet")
	if in.ParentID != clientSpan || up.ParentID != in.SpanID || up.Kind != "client" || up.Attrs["switchboard.server"] != "local" ||
		up.Attrs["mcp.method.name"] != "completion/complete" || up.Attrs["switchboard.outcome"] == "" {
		t.Errorf("the upstream completion span %+v is not a client span of local under the request's %+v", up, in)
	}
}
