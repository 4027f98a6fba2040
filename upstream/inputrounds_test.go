package upstream_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// inputRoundTransports are the sessions of a go-sdk server of the
// 2026-07-28 protocol (the testserver): over
// stdio and (stateless) Streamable HTTP, asked for that version. Legacy SSE has no 2026-07-28 form: a server
// there never answers with a request for input.
func inputRoundTransports(t *testing.T) map[string]*sb.ServerConfig {
	return map[string]*sb.ServerConfig{
		"stdio": {Name: "test", Transport: sb.TransportStdio, Command: testserver.Binary(t), ProtocolVersion: "2026-07-28"},
		"streamable-http": {Name: "test", Transport: sb.TransportStreamableHTTP,
			URL: testserver.StartHTTP(t, "-stateless").URL, ProtocolVersion: "2026-07-28"},
	}
}

// firstText is the text of a result's first content.
func firstText(t *testing.T, res *upstream.Result) string {
	t.Helper()
	dec, err := res.Decode()
	if err != nil || len(dec.Content) == 0 {
		t.Fatalf("result %s: %v", res.Raw, err)
	}
	tc, ok := dec.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result %s: no text", res.Raw)
	}
	return tc.Text
}

// A server of the 2026-07-28 protocol that answers a call with a request
// for input (resultType input_required) has it answered by the call's
// caller (OnElicitation), and the call is sent again with the answer and
// the server's requestState (wireCall's loop), on each transport.
func TestInputRequiredIsAnsweredByTheCaller(t *testing.T) {
	for name, cfg := range inputRoundTransports(t) {
		t.Run(name, func(t *testing.T) {
			s, _ := newSession(t, cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if v := s.Info().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", v)
			}
			var asked []string
			res, err := s.CallTool(context.Background(), "ask", map[string]any{"message": "name?"}, sb.InvokeOptions{
				OnElicitation: func(_ context.Context, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
					asked = append(asked, er.Message)
					return sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := firstText(t, res); got != "answer: Ada" || len(asked) != 1 || asked[0] != "name?" {
				t.Errorf("result %q after the questions %q; want \"answer: Ada\" after one \"name?\"", got, asked)
			}
			// Without a caller able to answer, the call fails: nothing is
			// made up for the server.
			if _, err := s.CallTool(context.Background(), "ask", nil, sb.InvokeOptions{}); err == nil || !strings.Contains(err.Error(), "cannot give") {
				t.Errorf("a call whose caller cannot answer: %v; want the call's error", err)
			}
		})
	}
}

// A call made for a 2026-07-28 client (InvokeOptions.Input) returns the
// server's request for input as its result, for the client to answer, and
// its retry carries the client's answers and the server's requestState.
func TestInputRequiredGoesToANewClient(t *testing.T) {
	for name, cfg := range inputRoundTransports(t) {
		t.Run(name, func(t *testing.T) {
			s, _ := newSession(t, cfg, nil)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			elicitation := func(context.Context, sb.ElicitationRequest) (sb.ElicitationResponse, error) {
				t.Error("Switchboard answered the request for input itself")
				return sb.ElicitationResponse{Action: "decline"}, nil
			}
			first, err := s.CallTool(context.Background(), "ask", map[string]any{"message": "name?"}, sb.InvokeOptions{
				OnElicitation: elicitation, Input: &sb.InputRound{Capabilities: json.RawMessage(`{"elicitation":{}}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			var asked struct {
				ResultType    string                     `json:"resultType"`
				RequestState  string                     `json:"requestState"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
			}
			if err := json.Unmarshal(first.Raw, &asked); err != nil || asked.ResultType != "input_required" || asked.RequestState != "asked" ||
				!strings.Contains(string(asked.InputRequests["answer"]), `"name?"`) {
				t.Fatalf("first answer %s (%v); want the server's request for input", first.Raw, err)
			}
			res, err := s.CallTool(context.Background(), "ask", map[string]any{"message": "name?"}, sb.InvokeOptions{
				OnElicitation: elicitation, Input: &sb.InputRound{Capabilities: json.RawMessage(`{"elicitation":{}}`),
					Responses: json.RawMessage(`{"answer":{"action":"accept","content":{"answer":"Bo"}}}`), State: asked.RequestState},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := firstText(t, res); got != "answer: Bo" {
				t.Errorf("the retry's result %q, want \"answer: Bo\"", got)
			}
		})
	}
}
