package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/otlptest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
)

// auditLog is an audit log on a store of its own; entries returns what it
// recorded, once the log has written its queue (it records no more).
func auditLog(t *testing.T) (*audit.Log, func() []sb.AuditEntry) {
	t.Helper()
	st := sqlitetest.Store(t)
	l := audit.New(audit.Options{Store: st})
	return l, func() []sb.AuditEntry {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l.Run(ctx) // writes what is queued, and returns
		es, err := st.ListAudit(context.Background(), sb.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
}

// A call that fails before any upstream is reached leaves an entry with
// its failure's code, as one the upstream answers does: a tool or prompt
// /mcp does not show (refused by the go-sdk's server), and an API call of
// an unknown server or a malformed address (refused by the executor).
func TestEveryCallAttemptLeavesAnAuditEntry(t *testing.T) {
	l, entries := auditLog(t)
	e := newEnvWith(t, gateway.Options{ResyncInterval: time.Second, Audit: l}, stdio(t, "local"))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "local__echo")
	ctx := context.Background()

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__nosuch", Arguments: map[string]any{"a": 1}}); err == nil {
		t.Error("a call of a tool /mcp does not show succeeded")
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "local__nosuch"}); err == nil {
		t.Error("a get of a prompt /mcp does not show succeeded")
	}
	if got := text(t)(cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__echo", Arguments: map[string]any{"text": "hi"}})); got != "hi" {
		t.Errorf("local__echo answered %q", got)
	}
	for _, body := range []string{`{"tool":"nosuch/echo","arguments":{}}`, `{"tool":"noslash"}`} {
		resp, err := http.Post(e.url+"/api/v1/call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST /api/v1/call %s: %s, want a failure", body, resp.Status)
		}
	}
	cs.Close()

	type key struct{ surface, kind, server, name, outcome string }
	var got []key
	for _, en := range entries() {
		got = append(got, key{en.Surface, string(en.Kind), en.Server, en.Name, en.Outcome})
	}
	want := []key{
		{sb.SurfaceMCP, string(sb.AuditTool), "", "local__nosuch", string(sb.CodeUnknownTool)},
		{sb.SurfaceMCP, string(sb.AuditPrompt), "", "local__nosuch", string(sb.CodeNotFound)},
		{sb.SurfaceMCP, string(sb.AuditTool), "local", "echo", "ok"},
		{sb.SurfaceAPI, string(sb.AuditTool), "nosuch", "echo", string(sb.CodeUnknownServer)},
		{sb.SurfaceAPI, string(sb.AuditTool), "", "noslash", string(sb.CodeBadAddress)},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A bridged call (bridge.go: a 2025-11-25 upstream's elicitation during a
// 2026-07-28 client's call) is one call, whatever its rounds: the audit
// log has one entry for it, written when the upstream call ends, with the
// first round's time and the whole call's duration (a retry whose state
// is refused is an attempt of its own, bad_request); the trace has a server
// span per round (the request for input, then the retry that resumes it),
// and one upstream span, under the round that started it, for the one upstream
// call, which the retry's answer lets end.
func TestABridgedCallIsOneAuditEntryAndOneUpstreamSpan(t *testing.T) {
	rcv, flush := tracing(t)
	l, entries := auditLog(t)
	e := newEnvWith(t, gateway.Options{ResyncInterval: time.Second, Audit: l}, stdio(t, "local"))
	asked := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}, nil
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp/local"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	waitTools(t, cs, "elicit")
	const traceID, clientSpan = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1", "1b1b1b1b1b1b1b1b"
	got := resultText(cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "name?"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}}))
	if got != "answer: 42" || asked != 1 {
		t.Fatalf("result %q after %d questions; want the answer after one", got, asked)
	}
	// A retry whose requestState the gateway does not hold is refused:
	// an attempt of its own, which ran nothing.
	r := newRequest(t, e.url+"/mcp/local", "tools/call", "elicit",
		`{"name":"elicit","arguments":{"message":"name?"},"inputResponses":{},"requestState":"sb1.made-up"}`, `{"elicitation":{}}`)
	if a := send(t, r); !strings.Contains(a.err, `"code":-32602`) {
		t.Errorf("a retry with a made-up state: HTTP %d, result %s, error %s; want -32602", a.status, a.result, a.err)
	}
	cs.Close()
	flush()

	var calls []sb.AuditEntry
	for _, en := range entries() {
		if en.Kind == sb.AuditTool {
			calls = append(calls, en)
		}
	}
	if len(calls) != 2 || calls[0].Server != "local" || calls[0].Name != "elicit" || calls[0].Outcome != "ok" || calls[0].Surface != sb.SurfaceMCPServer ||
		calls[1].Name != "elicit" || calls[1].Outcome != string(sb.CodeBadRequest) {
		t.Errorf("audit entries: %+v, want one, ok, of the bridged call of local's elicit on mcp_server, then the refused retry's, bad_request", calls)
	}

	var rounds, upstream []otlptest.Span
	for _, s := range rcv.Trace(traceID) { // the client's retry carries its first round's _meta
		switch {
		case s.Name == "tools/call elicit" && s.Kind == "server":
			rounds = append(rounds, s)
		case s.Name == "tools/call elicit" && s.Kind == "client":
			upstream = append(upstream, s)
		}
	}
	if len(rounds) != 2 || len(upstream) != 1 {
		t.Fatalf("%d server spans and %d upstream spans of the bridged call, want 2 (a round each) and 1: %+v %+v", len(rounds), len(upstream), rounds, upstream)
	}
	for _, r := range rounds {
		if r.ParentID != clientSpan || r.Attrs["switchboard.outcome"] != "ok" {
			t.Errorf("round %+v is not an ok span under the client's %s", r, clientSpan)
		}
	}
	if p := upstream[0].ParentID; (p != rounds[0].SpanID && p != rounds[1].SpanID) || upstream[0].Attrs["switchboard.outcome"] != "ok" {
		t.Errorf("the upstream span %+v is not the ok child of a round", upstream[0])
	}
}
