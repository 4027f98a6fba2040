package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// An audit entry is one line of text, what it was named by its kind, or
// one JSON object on a line.
func TestAuditEntry(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	for _, tc := range []struct {
		e    api.AuditEntry
		want string
	}{
		{api.AuditEntry{Time: at, Principal: "ci", Surface: "mcp", Kind: "tool", Server: "gh", Tool: "search", Outcome: "ok", DurationMS: 1.2345, RequestBytes: 10, ResultBytes: 200},
			"2026-03-04T05:06:07.008Z  ci         mcp         ok              1.23ms  gh/search  10B>200B\n"},
		{api.AuditEntry{Time: at, Principal: "local", Surface: "toolset", Toolset: "coder", Kind: "resource", Server: "fs", Resource: "file:///a", Outcome: "timeout", DurationMS: 2000},
			"2026-03-04T05:06:07.008Z  local      toolset:coder timeout             2s  fs file:///a  0B>0B\n"},
		{api.AuditEntry{Time: at, Principal: "admin", Surface: "mcp", Kind: "prompt", Server: "gh", Prompt: "review", Outcome: "ok"},
			"2026-03-04T05:06:07.008Z  admin      mcp         ok                  0s  gh prompt review  0B>0B\n"},
		{api.AuditEntry{Time: at, Principal: "ci", Surface: "mcp", Kind: "task", Server: "gh", Task: "tasks/cancel t-1", Outcome: "ok"},
			"2026-03-04T05:06:07.008Z  ci         mcp         ok                  0s  gh tasks/cancel t-1  0B>0B\n"},
		{api.AuditEntry{Time: at, Principal: "admin", Surface: "api", Kind: "api", Request: "PUT /api/v1/servers/x", Outcome: "ok"},
			"2026-03-04T05:06:07.008Z  admin      api         ok                  0s  PUT /api/v1/servers/x  0B>0B\n"},
	} {
		var b bytes.Buffer
		if err := AuditEntry(&b, tc.e, false); err != nil || b.String() != tc.want {
			t.Errorf("text:\n got %q, %v\nwant %q", b.String(), err, tc.want)
		}
		b.Reset()
		var back api.AuditEntry
		if err := AuditEntry(&b, tc.e, true); err != nil || strings.Count(b.String(), "\n") != 1 || json.Unmarshal(b.Bytes(), &back) != nil || back.Outcome != tc.e.Outcome {
			t.Errorf("json: %q, %v", b.String(), err)
		}
	}
}

func TestToolHits(t *testing.T) {
	var b bytes.Buffer
	ToolHits(&b, "read a file", nil)
	if b.String() != "no tool matches \"read a file\"\n" {
		t.Errorf("no hits: %q", b.String())
	}
	b.Reset()
	ToolHits(&b, "q", []api.ToolHit{{Server: "fs", Name: "read_file", Description: "Read a file.\nMore.", Score: 1.5}})
	if want := "TOOL          SCORE  DESCRIPTION\nfs/read_file  1.50   Read a file. …\n"; b.String() != want {
		t.Errorf("hits:\n got %q\nwant %q", b.String(), want)
	}
}

func TestNoToolsSaysWhy(t *testing.T) {
	var b bytes.Buffer
	NoTools(&b, nil)
	contains(t, "every server", b.String(), "no server is connected")
	b.Reset()
	v := &sb.ServerView{ServerConfig: sb.ServerConfig{Name: "gh"}}
	v.Runtime.Status = sb.StatusError
	v.Runtime.Error = &sb.ErrorInfo{Phase: sb.PhaseSpawn, Message: "no such file\nsecond line"}
	NoTools(&b, v)
	if want := "gh has no tools (status error; spawn: no such file …)\n"; b.String() != want {
		t.Errorf("one server: %q, want %q", b.String(), want)
	}
}

func TestProgressMode(t *testing.T) {
	var notTerminal bytes.Buffer
	for mode, want := range map[string]string{"auto": "lines", "bar": "bar", "lines": "lines", "none": "none"} {
		if got, err := ProgressMode(mode, &notTerminal); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", mode, got, err, want)
		}
	}
	if _, err := ProgressMode("fancy", &notTerminal); err == nil || !strings.Contains(err.Error(), "want bar, lines, none or auto") {
		t.Errorf("fancy: %v", err)
	}
}

func TestLines(t *testing.T) {
	var b bytes.Buffer
	if err := Lines(&b, []string{"a", "b"}); err != nil || b.String() != "a\nb\n" {
		t.Errorf("%q, %v", b.String(), err)
	}
}

// check -o json leaves the logs out when there are none and escapes
// HTML as encoding/json does (unlike JSON, the API's).
func TestCheckJSON(t *testing.T) {
	var b bytes.Buffer
	info := sb.RuntimeInfo{Status: sb.StatusConnected, ServerInfo: &sb.ServerInfo{Name: "a<b>"}}
	if err := CheckJSON(&b, info, nil); err != nil || strings.Contains(b.String(), `"logs"`) || !strings.Contains(b.String(), `a\u003cb\u003e`) {
		t.Errorf("no logs: %s, %v", b.String(), err)
	}
	b.Reset()
	if err := CheckJSON(&b, info, []string{"started"}); err != nil || !strings.Contains(b.String(), "\"logs\": [\n    \"started\"\n  ]") {
		t.Errorf("logs: %s, %v", b.String(), err)
	}
}

func TestClientChoice(t *testing.T) {
	clients := map[string]string{"vscode": "VS Code", "claude": "Claude Desktop"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name the client to configure:\n  claude       Claude Desktop\n  vscode       VS Code"},
		{[]string{"emacs"}, "no client \"emacs\"; the clients are:\n  claude       Claude Desktop\n  vscode       VS Code"},
		{[]string{"a", "b"}, "name one client; the clients are:\n  claude       Claude Desktop\n  vscode       VS Code"},
	} {
		if err := ClientChoice(tc.args, clients); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
