package upstream_test

import (
	"context"
	"encoding/json"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// capsOf is a capabilities object as the testserver's capabilities tool
// shows it.
type capsOf struct {
	Elicitation *json.RawMessage `json:"elicitation"`
	Sampling    *json.RawMessage `json:"sampling"`
}

func (c capsOf) String() string {
	switch e, smp := c.Elicitation != nil, c.Sampling != nil; {
	case e && smp:
		return "elicitation,sampling"
	case e:
		return "elicitation"
	case smp:
		return "sampling"
	}
	return "none"
}

// declared is what the testserver's capabilities tool says: the
// capabilities its session's client declared in initialize, those the
// go-sdk gives the request (its _meta's first), and its pid.
type declared struct {
	Session capsOf `json:"capabilities"`
	Request capsOf `json:"request"`
	PID     int    `json:"pid"`
}

func askDeclared(t *testing.T, s *upstream.Session, in *sb.InputRound) declared {
	t.Helper()
	res, err := s.CallTool(context.Background(), "capabilities", nil, sb.InvokeOptions{Input: in})
	if err != nil {
		t.Fatal(err)
	}
	var d declared
	if err := json.Unmarshal([]byte(firstText(t, res)), &d); err != nil {
		t.Fatalf("capabilities: %s: %v", res.Raw, err)
	}
	return d
}

// capCases are 2026-07-28 clients' capabilities, the set of them that
// Switchboard relays (elicitation in form mode, sampling) and what the
// request names (the client's own, as it sent them).
var capCases = []struct{ caps, want, request string }{
	{`{"elicitation":{},"sampling":{}}`, "elicitation,sampling", "elicitation,sampling"},
	{`{"elicitation":{"form":{}},"sampling":{"tools":{}},"roots":{}}`, "elicitation,sampling", "elicitation,sampling"},
	{`{"sampling":{}}`, "sampling", "sampling"},
	{`{"elicitation":{}}`, "elicitation", "elicitation"},
	{`{"elicitation":{"url":{}}}`, "none", "elicitation"}, // form is what is relayed
	{`{}`, "none", "none"},
	{`{"sampling":{}}`, "sampling", "sampling"}, // again: the same session
}

// A 2026-07-28 client's call to a Streamable HTTP server of 2025-11-25
// reaches the server on a session that declared, in initialize, the
// client's own capabilities (of those Switchboard relays), so that the
// server can refuse what the client did not declare: the server's own
// session declares both, and serves the clients that declare both and
// every call without a client of that protocol; any other set gets an MCP
// session of its own, reused by the next call of that set and closed with
// the server's session.
func TestCallsTakeTheSessionOfTheirClientsCapabilities(t *testing.T) {
	srv := testserver.StartHTTP(t)
	s, _ := newSession(t, &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP,
		URL: srv.URL, ProtocolVersion: "2025-11-25"}, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if own := askDeclared(t, s, nil); own.Session.String() != "elicitation,sampling" {
		t.Fatalf("the server's session declared %s, want elicitation,sampling", own.Session)
	}
	for _, c := range capCases {
		d := askDeclared(t, s, &sb.InputRound{Capabilities: json.RawMessage(c.caps)})
		if d.Session.String() != c.want || d.Request.String() != c.request {
			t.Errorf("a client declaring %s: the session declared %s, the request named %s; want %s, %s", c.caps, d.Session, d.Request, c.want, c.request)
		}
	}
	if n := upstream.CapSessions(s); n != 3 {
		t.Errorf("%d capability-set sessions, want 3 (sampling, elicitation, none)", n)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := upstream.CapSessions(s); n != 0 {
		t.Errorf("%d capability-set sessions after Shutdown, want 0", n)
	}
}

// A stdio server's one process serves every call, whatever its client's
// capabilities (a process per set would keep a state apart from the one
// that serves the lists); the call names the client's capabilities in
// _meta, which a go-sdk server reads before its session's.
func TestStdioCallsNameTheirClientsCapabilities(t *testing.T) {
	s, _ := newSession(t, stdioConfig(t), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	own := askDeclared(t, s, nil)
	if own.Session.String() != "elicitation,sampling" || own.Request.String() != "elicitation,sampling" {
		t.Fatalf("the server's session declared %s (request: %s), want elicitation,sampling", own.Session, own.Request)
	}
	for _, c := range capCases {
		d := askDeclared(t, s, &sb.InputRound{Capabilities: json.RawMessage(c.caps)})
		if d.Request.String() != c.request || d.PID != own.PID {
			t.Errorf("a client declaring %s: the request named %s in pid %d; want %s in pid %d", c.caps, d.Request, d.PID, c.request, own.PID)
		}
	}
	if n := upstream.CapSessions(s); n != 0 {
		t.Errorf("%d capability-set sessions of a stdio server, want 0", n)
	}
}

// A server of the 2026-07-28 protocol is told each call's capabilities:
// no session of a set is made for it.
func TestA2026ServerNeedsNoSessionPerCapabilities(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.ProtocolVersion = "2026-07-28"
	s, _ := newSession(t, cfg, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := askDeclared(t, s, nil).PID
	if got := askDeclared(t, s, &sb.InputRound{Capabilities: json.RawMessage(`{}`)}).PID; got != want {
		t.Errorf("a call declaring no capabilities ran in pid %d, want the server's %d", got, want)
	}
}
