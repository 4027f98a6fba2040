package render

import (
	"bytes"
	"encoding/json"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

// What a hostile server can put in a tool name, a result or a log line is
// shown escaped, whatever way the bytes arrive, and JSON stays JSON.
func TestTerminalWriterEscapesControlSequences(t *testing.T) {
	in := "clear\x1b[2J title\x1b]0;pwned\x07 cr\roverwrite rtl\u202eevil\u202c nel\u0085 ok: tab\tnewline\n é ✓"
	want := `clear\u001b[2J title\u001b]0;pwned\u0007 cr\u000doverwrite rtl\u202eevil\u202c nel\u0085 ok: tab` + "\tnewline\n é ✓"
	for _, chunk := range []int{1, 2, 3, len(in)} {
		var buf bytes.Buffer
		w := NewTerminalWriter(&buf)
		for b := []byte(in); len(b) > 0; {
			n := min(chunk, len(b))
			if _, err := w.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if buf.String() != want {
			t.Errorf("chunks of %d: %q\nwant          %q", chunk, buf.String(), want)
		}
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(NewTerminalWriter(&buf))
	enc.Encode(map[string]string{"name": "tool\u202e\u0085\x1b"})
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["name"] != "tool\u202e\u0085\x1b" {
		t.Fatalf("JSON through the writer: %s (%v)", buf.String(), err)
	}
	if bytes.ContainsRune(buf.Bytes(), '\u202e') {
		t.Fatalf("the JSON output carries a raw U+202E: %q", buf.String())
	}

	if got := SafeLine("a\nb\x1bc"); got != `a\u000ab\u001bc` {
		t.Errorf("terminalSafe = %q", got)
	}
}

func TestSandboxSummary(t *testing.T) {
	for _, tc := range []struct {
		in   sb.SandboxInfo
		want string
	}{
		{sb.SandboxInfo{Enabled: true, Network: true, Limits: "rlimit", WorkspaceMode: "shared", Unenforced: []string{"pids"}},
			"on (network on; limits rlimit; shared workspace; not enforced here: pids)"},
		{sb.SandboxInfo{Enabled: true, Limits: "cgroup", WorkspaceMode: "isolated"}, "on (network off; limits cgroup; isolated workspace)"},
		{sb.SandboxInfo{Enabled: true, Limits: "cgroup", WorkspaceMode: sb.WorkspacePerServer}, "on (network off; limits cgroup; per-server workspace)"},
		{sb.SandboxInfo{Reason: "bwrap is not installed"}, "off (bwrap is not installed)"},
		{sb.SandboxInfo{Enabled: true, Network: true, NetworkAllow: []string{"api.github.com:443"}, Limits: "none"},
			"on (network only to api.github.com:443; limits none)"},
		{sb.SandboxInfo{Enabled: true, Network: true, NetworkAllow: []string{"api.github.com:443"},
			NetworkAllowed: []string{"api.github.com:443 = 140.82.112.6"}, Limits: "none"},
			"on (network only to api.github.com:443 = 140.82.112.6; limits none)"},
	} {
		if got := SandboxSummary(&tc.in); got != tc.want {
			t.Errorf("sandboxSummary(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
