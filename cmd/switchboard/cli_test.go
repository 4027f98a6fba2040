package main

// The client verbs are tested as a person or a script uses them: the
// switchboard binary is built once, "switchboard serve" runs as a real
// process on a temporary SQLite database, and every verb runs as its own
// process against it, with the fault-injecting testserver as the MCP
// server. Helpers that need a terminal (the progress bar, elicitation
// questions) are tested in process at the end of the file.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/clientconfig"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// secret is the env value given to servers; no output may contain it.
const secret = "secret-value"

// Time limits of the process tests.
const (
	verbTimeout    = 60 * time.Second // one CLI verb
	connectTimeout = 30 * time.Second // a server reaching status connected
	serveStopWait  = 10 * time.Second // serve exiting after SIGTERM
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testserver.RemoveBinary()
		daemontest.RemoveBinary()
		os.Exit(code)
	}))
}

// target is what the verbs run against: the address of a daemon, and the
// daemon itself when the test started one.
type target struct {
	addr      string             // SWITCHBOARD_ADDR
	configDir string             // XDG_CONFIG_HOME, the daemon's: the verbs find its credential as its user would
	serve     *daemontest.Daemon // nil if the test started none

	mu      sync.Mutex
	outputs []string // stdout and stderr of every verb run against it, for the secret check
}

// startServe starts "switchboard serve" on a free port and a fresh
// database, and stops it (SIGTERM, exit 0 within 10 s) when the test ends.
func startServe(t *testing.T, o daemontest.Options) *target {
	t.Helper()
	o.StopGrace = serveStopWait
	d := &target{serve: daemontest.Start(t, o)}
	d.addr, d.configDir = d.serve.URL, d.serve.ConfigDir
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends SIGTERM and requires a clean exit within 10 s.
func (d *target) stop(t *testing.T) {
	select {
	case <-d.serve.Done():
		return // stopped already
	default:
	}
	start := time.Now()
	if err := d.serve.Stop(); err != nil {
		t.Errorf("%v; log:\n%s", err, d.serve.Logs())
		return
	}
	t.Logf("serve stopped in %v", time.Since(start).Round(time.Millisecond))
}

// result is what one verb did.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs the switchboard binary with args against d (SWITCHBOARD_ADDR,
// and XDG_CONFIG_HOME: the daemon's, or an empty directory) plus env, with
// stdin as its input.
func (d *target) run(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, daemontest.Binary(t), args...)
	configDir := d.configDir
	if configDir == "" {
		configDir = t.TempDir()
	}
	cmd.Env = daemontest.Environ(append([]string{"SWITCHBOARD_ADDR=" + d.addr, "XDG_CONFIG_HOME=" + configDir}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("switchboard %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("switchboard %s did not finish within %v", strings.Join(args, " "), verbTimeout)
	}
	d.mu.Lock()
	// The command line is left out: it holds the secret of "server add".
	d.outputs = append(d.outputs, fmt.Sprintf("output of switchboard %s:\n%s", args[0], r))
	d.mu.Unlock()
	return r
}

// ok runs a verb that must succeed.
func (d *target) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := d.run(t, nil, "", args...)
	if r.code != 0 {
		t.Fatalf("switchboard %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// fail runs a verb that must fail, with stderr containing every want.
func (d *target) fail(t *testing.T, want []string, args ...string) result {
	t.Helper()
	r := d.run(t, nil, "", args...)
	if r.code == 0 {
		t.Fatalf("switchboard %s succeeded, want failure: %s", strings.Join(args, " "), r)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("switchboard %s: stderr lacks %q: %s", strings.Join(args, " "), w, r)
		}
	}
	return r
}

// view reads one server with "server show --json".
func (d *target) view(t *testing.T, name string) sb.ServerView {
	t.Helper()
	r := d.ok(t, "server", "show", name, "--json")
	var v sb.ServerView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("server show --json: %v\n%s", err, r.stdout)
	}
	return v
}

// waitStatus polls until the server has status want (and, if cond is not
// nil, cond holds) and returns its view.
func (d *target) waitStatus(t *testing.T, name string, want sb.Status, cond func(sb.ServerView) bool) sb.ServerView {
	t.Helper()
	deadline := time.Now().Add(connectTimeout)
	for {
		v := d.view(t, name)
		if v.Runtime.Status == want && (cond == nil || cond(v)) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %s after %v, want %s; runtime %+v; serve log:\n%s", name, v.Runtime.Status, connectTimeout, want, v.Runtime, d.serve.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// TestCLI runs every client verb against one daemon, in the order a
// person would: add, inspect, call, manage, import, remove.
func TestCLI(t *testing.T) {
	ts := testserver.Binary(t)
	d := startServe(t, daemontest.Options{})

	// server add: a stdio server with a secret env value.
	r := d.ok(t, "server", "add", "echo-srv", "--command", ts, "--env", "API_KEY="+secret, "--call-timeout", "30s")
	contains(t, "server add", r.stdout, "added echo-srv", "stdio")
	d.waitStatus(t, "echo-srv", sb.StatusConnected, nil)
	d.fail(t, []string{"exists:", "echo-srv"}, "server", "add", "echo-srv", "--command", ts)
	d.fail(t, []string{"invalid_config:", "name"}, "server", "add", "Bad_Name", "--command", ts)
	d.fail(t, []string{"give --command", "or --url"}, "server", "add", "neither")

	t.Run("list", func(t *testing.T) {
		r := d.ok(t, "server", "list")
		contains(t, "server list", r.stdout, "NAME", "STATUS", "TRANSPORT", "TOOLS", "RECONNECTS", "ERROR")
		if !regexp.MustCompile(`(?m)^echo-srv\s+connected\s+stdio\s+\d+\s+0\s+-$`).MatchString(r.stdout) {
			t.Errorf("server list: no row for echo-srv:\n%s", r.stdout)
		}
		r = d.ok(t, "server", "list", "--json")
		var body struct {
			Servers []sb.ServerView `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &body); err != nil {
			t.Fatalf("server list --json: %v\n%s", err, r.stdout)
		}
		if len(body.Servers) != 1 || body.Servers[0].Name != "echo-srv" || body.Servers[0].Env["API_KEY"] != sb.SecretMask {
			t.Errorf("server list --json: %+v", body.Servers)
		}
	})

	t.Run("show", func(t *testing.T) {
		r := d.ok(t, "server", "show", "echo-srv")
		contains(t, "server show", r.stdout, "echo-srv", "API_KEY=***", "call timeout", "30s",
			"status", "connected", "testserver 1.0.0", "echo-srv/echo", "echo-srv/slow")
		v := d.view(t, "echo-srv")
		if v.Env["API_KEY"] != sb.SecretMask || v.Runtime.PID == 0 {
			t.Errorf("server show --json: env %v, pid %d", v.Env, v.Runtime.PID)
		}
		d.fail(t, []string{"not_found:", "nope"}, "server", "show", "nope")
	})

	t.Run("tools", func(t *testing.T) {
		r := d.ok(t, "tools")
		contains(t, "tools", r.stdout, "TOOL", "ARGUMENTS", "echo-srv/echo", "text*", "echo-srv/slow", "duration_ms*")
		r = d.ok(t, "tools", "echo-srv")
		contains(t, "tools echo-srv", r.stdout, "echo-srv/echo", "echo-srv/fail")
		r = d.ok(t, "tools", "--json")
		var body struct {
			Tools []struct{ Address string } `json:"tools"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &body); err != nil || len(body.Tools) == 0 {
			t.Fatalf("tools --json: %v\n%s", err, r.stdout)
		}
		d.fail(t, []string{"not_found:"}, "tools", "nope")
	})

	t.Run("call", func(t *testing.T) {
		// The text, once: not the structured content that repeats it.
		r := d.ok(t, "call", "echo-srv/echo", `{"text": "hello from the cli"}`)
		if r.stdout != "hello from the cli\n" {
			t.Errorf("call echo: stdout %q, want the text alone", r.stdout)
		}

		r = d.ok(t, "call", "echo-srv/echo", `{"text": "raw"}`, "--json")
		var res struct {
			Content []struct{ Type, Text string }
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != "raw" {
			t.Errorf("call --json: %v\n%s", err, r.stdout)
		}

		r = d.run(t, nil, `{"text": "from stdin"}`, "call", "echo-srv/echo", "-")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "from stdin\n") {
			t.Errorf("call with arguments on stdin: %s", r)
		}

		r = d.ok(t, "call", "echo-srv/mixed")
		contains(t, "call mixed", r.stdout, "text part", "[image image/png, 8 bytes]", "[audio audio/wav, 16 bytes]",
			"[resource link test://hello", "[resource test://items/7 text/plain, 6 bytes]")
		r = d.ok(t, "call", "echo-srv/mixed", "-o", "json")
		contains(t, "call mixed -o json", r.stdout, `"structuredContent": {`, `"answer": 42`)

		// No terminal: progress as lines on stderr, no bar; the result
		// alone on stdout.
		r = d.ok(t, "call", "echo-srv/slow", `{"duration_ms": 500, "interval_ms": 100}`, "--timeout", "20s", "--reset-on-progress", "--max-total", "1m")
		if r.stdout != "done after 500ms\n" {
			t.Errorf("call slow: stdout %q", r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, "\r") || strings.Contains(r.stderr, "[=") {
			t.Errorf("call slow without a terminal drew a bar: %s", r)
		}
		if !regexp.MustCompile(`(?m)^progress \d+/5`).MatchString(r.stderr) {
			t.Errorf("call slow without a terminal printed no progress line: %s", r)
		}
		r = d.ok(t, "call", "echo-srv/slow", `{"duration_ms": 300, "interval_ms": 100}`, "--progress", "none")
		if r.stderr != "" || r.stdout != "done after 300ms\n" {
			t.Errorf("call --progress none: %s", r)
		}
		d.fail(t, []string{"--progress \"dots\": want bar, lines, none or auto"}, "call", "echo-srv/echo", "--progress", "dots")

		r = d.fail(t, []string{"boom", "isError"}, "call", "echo-srv/fail", `{"message": "boom"}`)
		if strings.Contains(r.stdout, "boom") {
			t.Errorf("call fail: the tool error went to stdout: %s", r)
		}
		d.fail(t, []string{"error (unknown_tool", `did you mean "echo"`}, "call", "echo-srv/ech")
		// Bad JSON: the example is made of the tool's own first field.
		d.fail(t, []string{"not valid JSON", `'{"a": 1}'`}, "call", "echo-srv/add", `{a: 1}`)
		d.fail(t, []string{"must be a JSON object", `'{"text": "..."}'`}, "call", "echo-srv/echo", `"hi"`)
		d.fail(t, []string{"error (unknown_server"}, "call", "nosuch/echo")
		d.fail(t, []string{"error (timeout, phase tool_call)"}, "call", "echo-srv/sleep", `{"ms": 5000}`, "--timeout", "200ms")
		d.fail(t, []string{"want SERVER/TOOL"}, "call", "echo")
		d.fail(t, []string{"not valid JSON"}, "call", "echo-srv/echo", `{text}`)
		d.fail(t, []string{"--timeout must not be negative"}, "call", "echo-srv/echo", "--timeout", "-1s")

		// Elicitation without a terminal is declined.
		r = d.ok(t, "call", "echo-srv/elicit")
		if r.stdout != "declined\n" {
			t.Errorf("call elicit: %s", r)
		}
		contains(t, "call elicit stderr", r.stderr, "declined")
	})

	t.Run("test and logs", func(t *testing.T) {
		r := d.ok(t, "server", "test", "echo-srv")
		contains(t, "server test", r.stdout, "status", "connected", "testserver 1.0.0", "echo")
		r = d.ok(t, "server", "test", "echo-srv", "--json")
		var tr api.TestResult
		if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil || tr.Runtime.Status != sb.StatusConnected {
			t.Errorf("server test --json: %v\n%s", err, r.stdout)
		}
		r = d.ok(t, "server", "logs", "echo-srv")
		contains(t, "server logs", r.stdout, "testserver: started", "testserver: call echo")
		r = d.ok(t, "server", "logs", "echo-srv", "-n", "1")
		if n := strings.Count(r.stdout, "\n"); n != 1 {
			t.Errorf("server logs -n 1: %d lines:\n%s", n, r.stdout)
		}

		// A server that cannot start: the test reports where and why.
		d.ok(t, "server", "add", "broken", "--command", "/nonexistent/mcp-server", "--disabled")
		r = d.fail(t, []string{"did not connect"}, "server", "test", "broken")
		contains(t, "server test broken", r.stdout, "status", "error", "phase", "spawn")
		d.ok(t, "server", "rm", "broken")
	})

	t.Run("restart disable enable", func(t *testing.T) {
		before := d.view(t, "echo-srv").Runtime.PID
		r := d.ok(t, "server", "restart", "echo-srv")
		contains(t, "server restart", r.stdout, "restarting echo-srv")
		d.waitStatus(t, "echo-srv", sb.StatusConnected, func(v sb.ServerView) bool { return v.Runtime.PID != before })

		r = d.ok(t, "server", "disable", "echo-srv")
		contains(t, "server disable", r.stdout, "disabled echo-srv", "status disabled")
		r = d.ok(t, "server", "list")
		if !regexp.MustCompile(`(?m)^echo-srv\s+disabled\s`).MatchString(r.stdout) {
			t.Errorf("server list after disable:\n%s", r.stdout)
		}
		r = d.ok(t, "tools", "echo-srv")
		contains(t, "tools of a disabled server", r.stdout, "echo-srv has no tools (status disabled)")
		d.fail(t, []string{"error (", "disabled"}, "call", "echo-srv/echo", `{"text": "x"}`)
		d.fail(t, []string{"disabled:"}, "server", "restart", "echo-srv")

		r = d.ok(t, "server", "enable", "echo-srv")
		contains(t, "server enable", r.stdout, "enabled echo-srv")
		d.waitStatus(t, "echo-srv", sb.StatusConnected, nil)
		d.ok(t, "call", "echo-srv/echo", `{"text": "back"}`)
	})

	t.Run("import", func(t *testing.T) {
		file := writeClaudeFixture(t, ts)
		r := d.ok(t, "import", file, "--dry-run")
		contains(t, "import --dry-run", r.stdout, "would import", "imported-echo", `renamed from "Imported_Echo"`,
			"echo-srv", "exists", "needs-input", "skipped", "api-token", "remote-docs")
		if strings.Contains(d.ok(t, "server", "list").stdout, "imported-echo") {
			t.Fatal("import --dry-run created a server")
		}

		r = d.ok(t, "import", file)
		contains(t, "import", r.stdout, "claude-desktop", "imported-echo", "imported", `renamed from "Imported_Echo"`,
			"remote-docs", "exists", "needs-input", "imported 2, skipped 2, failed 0")
		if strings.Contains(r.stdout, "would import") {
			t.Errorf("import printed the dry-run wording:\n%s", r.stdout)
		}
		v := d.waitStatus(t, "imported-echo", sb.StatusConnected, nil)
		if v.Env["API_KEY"] != sb.SecretMask || v.Runtime.ServerInfo == nil || v.Runtime.ServerInfo.Name != "imported" {
			t.Errorf("imported server: env %v, server info %+v", v.Env, v.Runtime.ServerInfo)
		}
		if v := d.view(t, "remote-docs"); v.IsEnabled() || v.Transport != sb.TransportRemote {
			t.Errorf("remote-docs: enabled %v transport %s", v.IsEnabled(), v.Transport)
		}
		r = d.ok(t, "call", "imported-echo/echo", `{"text": "imported"}`)
		contains(t, "call of an imported server", r.stdout, "imported")

		// Importing again only finds existing names: not a failure.
		r = d.ok(t, "import", file, "--json")
		var rep clientconfig.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("import --json: %v\n%s", err, r.stdout)
		}
		if len(rep.Imported) != 0 || len(rep.Failed) != 0 || len(rep.Skipped) != 4 {
			t.Errorf("second import: %+v", rep)
		}
		d.fail(t, []string{"no such file"}, "import", filepath.Join(t.TempDir(), "missing.json"))
	})

	t.Run("rm", func(t *testing.T) {
		for _, name := range []string{"echo-srv", "imported-echo", "remote-docs"} {
			r := d.ok(t, "server", "rm", name)
			contains(t, "server rm", r.stdout, "removed "+name)
		}
		d.fail(t, []string{"not_found:"}, "server", "show", "echo-srv")
		d.fail(t, []string{"not_found:"}, "server", "rm", "echo-srv")
		r := d.ok(t, "server", "list")
		contains(t, "server list when empty", r.stdout, "no servers configured")
	})

	d.stop(t)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, out := range append(d.outputs, "serve log:\n"+d.serve.Logs()) {
		if strings.Contains(out, secret) {
			t.Errorf("the secret appears in an output:\n%s", out)
		}
	}
}

// writeClaudeFixture writes testdata/claude_desktop_config.json into a temp
// dir (under the same name, which tells the importer its format) with the
// testserver's path filled in.
func writeClaudeFixture(t *testing.T, testserverPath string) string {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "claude_desktop_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(testserverPath)
	data := strings.ReplaceAll(string(tmpl), `"@TESTSERVER@"`, string(quoted))
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCLIToken runs the verbs against a daemon that requires a token.
func TestCLIToken(t *testing.T) {
	const token = "tok-0123456789"
	ts := testserver.Binary(t)
	d := startServe(t, daemontest.Options{Token: token})
	withToken := []string{"SWITCHBOARD_TOKEN=" + token}

	for _, args := range [][]string{
		{"server", "list"},
		{"server", "add", "x", "--command", ts},
		{"tools"},
		{"call", "x/echo"},
		{"import", writeClaudeFixture(t, ts)},
	} {
		r := d.run(t, nil, "", args...)
		if r.code == 0 {
			t.Errorf("switchboard %s without a token succeeded: %s", strings.Join(args, " "), r)
		}
		contains(t, "stderr without a token", r.stderr, "unauthorized", "HTTP 401", "SWITCHBOARD_TOKEN")
	}
	for _, args := range [][]string{{"call", "--help"}, {"server", "list", "--help"}} {
		if r := d.run(t, withToken, "", args...); r.code != 0 || strings.Contains(r.stdout+r.stderr, token) {
			t.Errorf("switchboard %s printed the token: %s", strings.Join(args, " "), r)
		}
	}
	r := d.run(t, []string{"SWITCHBOARD_TOKEN=wrong"}, "", "server", "list")
	if r.code == 0 || !strings.Contains(r.stderr, "HTTP 401") {
		t.Errorf("a wrong token: %s", r)
	}

	r = d.run(t, withToken, "", "server", "add", "tok-srv", "--command", ts)
	if r.code != 0 {
		t.Fatalf("server add with the token: %s", r)
	}
	r = d.run(t, nil, "", "server", "list", "--token", token)
	if r.code != 0 || !strings.Contains(r.stdout, "tok-srv") {
		t.Errorf("server list --token: %s", r)
	}
	deadline := time.Now().Add(connectTimeout)
	for {
		r = d.run(t, withToken, "", "call", "tok-srv/echo", `{"text": "authorized"}`)
		if r.code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // still connecting
	}
	if r.code != 0 || !strings.HasPrefix(r.stdout, "authorized\n") {
		t.Errorf("call with the token: %s", r)
	}
	r = d.run(t, withToken, "", "server", "rm", "tok-srv")
	if r.code != 0 {
		t.Errorf("server rm with the token: %s", r)
	}
}

// TestCLIUnreachable: no daemon at the address is a clear error, and a
// bare host:port is accepted.
func TestCLIUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := &target{addr: addr} // nothing listens there now
	for _, args := range [][]string{{"server", "list"}, {"tools"}, {"call", "a/b"}} {
		r := d.run(t, nil, "", args...)
		want := `cannot reach switchboard at http://` + addr + `: is "switchboard serve" running?`
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("switchboard %s with nothing listening: %s\nwant stderr containing %q", strings.Join(args, " "), r, want)
		}
	}
	r := d.run(t, nil, "", "server", "list", "--addr", "ftp://x")
	if r.code == 0 || !strings.Contains(r.stderr, "--addr") {
		t.Errorf("a bad --addr: %s", r)
	}
}
