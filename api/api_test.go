package api

import (
	"encoding/json"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

// TestWireShapes pins the JSON of the wire types: these bodies are the
// API's outward contract, and a renamed field is a broken client.
func TestWireShapes(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{ErrorBody{Error: ErrorInfo{Code: sb.CodeTimeout, Message: "too slow", Phase: sb.PhaseToolCall}},
			`{"error":{"code":"timeout","message":"too slow","phase":"tool_call"}}`},
		{ErrorInfo{Code: sb.CodeNotFound, Message: "no"}, `{"code":"not_found","message":"no"}`},
		{ToolList{Tools: []ToolView{{Server: "s", Name: "t", Address: "s/t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}},
			`{"tools":[{"server":"s","name":"t","address":"s/t","description":"d","input_schema":{"type":"object"}}]}`},
		{CallRequest{Tool: "s/t", Arguments: json.RawMessage(`{"a":1}`), Options: CallOptions{TimeoutMS: 5, MaxTotalTimeoutMS: 9, ResetTimeoutOnProgress: true}},
			`{"tool":"s/t","arguments":{"a":1},"options":{"timeout_ms":5,"max_total_timeout_ms":9,"reset_timeout_on_progress":true}}`},
		{CallRequest{Tool: "s/t"}, `{"tool":"s/t","options":{}}`},
		{ElicitationEvent{ID: "e1", ElicitationRequest: sb.ElicitationRequest{Message: "Who?", RequestedSchema: json.RawMessage(`{}`)}},
			`{"id":"e1","message":"Who?","requested_schema":{}}`},
		{ElicitationAnswer{Action: "accept", Content: map[string]any{"a": "b"}}, `{"action":"accept","content":{"a":"b"}}`},
		{RestartResponse{Status: StatusRestarting}, `{"status":"restarting"}`},
		{LogLines{Lines: []string{"x"}}, `{"lines":["x"]}`},
		{ServerList{Servers: []sb.ServerView{}}, `{"servers":[]}`},
		{sb.Toolset{Name: "coder", Tools: []sb.Selector{{Server: "gh", Tool: "search_*"}, {Server: "fs", Tool: "read_file", As: "read", Description: "d"}},
			Prompts: []sb.Selector{{Server: "gh", Tool: "review"}}, Resources: []sb.ResourceSelector{{Server: "fs", URI: "file:///*"}}},
			`{"name":"coder","tools":[{"server":"gh","tool":"search_*"},{"server":"fs","tool":"read_file","as":"read","description":"d"}],"prompts":[{"server":"gh","tool":"review"}],"resources":[{"server":"fs","uri":"file:///*"}]}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T: %s, %v\nwant %s", tc.v, b, err, tc.want)
		}
	}
	b, _ := json.Marshal(TestResult{Logs: []string{}})
	var back map[string]json.RawMessage
	if json.Unmarshal(b, &back) != nil || back["runtime"] == nil || string(back["logs"]) != "[]" {
		t.Errorf("TestResult: %s", b)
	}
}

// TestViewsAlwaysSayWhetherEnabled: a config may leave "enabled" out
// (true), but a view always has it, so that jq 'select(.enabled)' works.
func TestViewsAlwaysSayWhetherEnabled(t *testing.T) {
	off := false
	for _, tc := range []struct {
		enabled *bool
		want    string
	}{{nil, "true"}, {&off, "false"}} {
		v := sb.ServerView{ServerConfig: sb.ServerConfig{Name: "x", Enabled: tc.enabled}, Version: 3}
		for _, b := range [][]byte{mustJSON(t, v), mustJSON(t, &v), mustJSON(t, ServerList{Servers: []sb.ServerView{v}})} {
			if !strings.Contains(string(b), `"enabled":`+tc.want) || !strings.Contains(string(b), `"version":3`) {
				t.Errorf("enabled %v: %s", tc.enabled, b)
			}
		}
		if v.Enabled != tc.enabled {
			t.Errorf("marshalling changed the view's config")
		}
	}
	// A config keeps leaving it out.
	if b := mustJSON(t, sb.ServerConfig{Name: "x"}); strings.Contains(string(b), "enabled") {
		t.Errorf("config: %s", b)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
