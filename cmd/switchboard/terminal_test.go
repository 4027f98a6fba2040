package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// What a hostile server can put in a tool name, a result or a log line is
// shown escaped, whatever way the bytes arrive, and JSON stays JSON.
func TestTerminalWriterEscapesControlSequences(t *testing.T) {
	in := "clear\x1b[2J title\x1b]0;pwned\x07 cr\roverwrite rtl\u202eevil\u202c nel\u0085 ok: tab\tnewline\n é ✓"
	want := `clear\u001b[2J title\u001b]0;pwned\u0007 cr\u000doverwrite rtl\u202eevil\u202c nel\u0085 ok: tab` + "\tnewline\n é ✓"
	for _, chunk := range []int{1, 2, 3, len(in)} {
		var buf bytes.Buffer
		w := newTerminalWriter(&buf)
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
	enc := json.NewEncoder(newTerminalWriter(&buf))
	enc.Encode(map[string]string{"name": "tool\u202e\u0085\x1b"})
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["name"] != "tool\u202e\u0085\x1b" {
		t.Fatalf("JSON through the writer: %s (%v)", buf.String(), err)
	}
	if bytes.ContainsRune(buf.Bytes(), '\u202e') {
		t.Fatalf("the JSON output carries a raw U+202E: %q", buf.String())
	}

	if got := terminalSafe("a\nb\x1bc"); got != `a\u000ab\u001bc` {
		t.Errorf("terminalSafe = %q", got)
	}
}

// End to end: a server that names itself with terminal escapes and a
// right-to-left override, shown by "server show" on a real daemon.
func TestHostileServerNamesReachTheTerminalEscaped(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	c := d.Client(nil)
	defer c.Close()
	hostile := "evil\x1b]0;owned\x07\u202egnp.exe"
	if _, err := c.CreateServer(context.Background(), &sb.ServerConfig{Name: "hostile", Transport: sb.TransportStdio,
		Command: testserver.Binary(t), Args: []string{"-name", hostile}}); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		cmd := daemontest.Command(t, "server", "show", "hostile", "--addr", d.URL)
		cmd.Env = append(cmd.Env, "SWITCHBOARD_TOKEN="+d.Token)
		var err error
		if out, err = cmd.Output(); err == nil && bytes.Contains(out, []byte("evil")) {
			break
		}
	}
	if !bytes.Contains(out, []byte(`evil\u001b]0;owned\u0007\u202egnp.exe`)) {
		t.Fatalf("server show:\n%s\nwant the name escaped", out)
	}
	if bytes.ContainsAny(out, "\x1b\x07\u202e") {
		t.Fatalf("raw control characters reached the terminal: %q", out)
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
		if got := sandboxSummary(&tc.in); got != tc.want {
			t.Errorf("sandboxSummary(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
