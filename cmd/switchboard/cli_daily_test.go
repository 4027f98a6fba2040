package main

// The verbs and flags of daily use, run as a person runs them against a
// real "switchboard serve": edit, --wait, paths relative to the user's
// directory, logs -f, events, -o, completion and version.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/buildinfo"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// runIn runs a verb in the directory dir, as a person in that directory.
func (d *target) runIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, daemontest.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = daemontest.Environ("SWITCHBOARD_ADDR="+d.addr, "XDG_CONFIG_HOME="+d.configDir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("switchboard %s: %v", strings.Join(args, " "), err)
	}
	d.mu.Lock()
	d.outputs = append(d.outputs, fmt.Sprintf("output of switchboard %s:\n%s", args[0], r))
	d.mu.Unlock()
	return r
}

// stream is a verb that keeps printing (logs -f, events), read line by
// line.
type stream struct {
	cmd   *exec.Cmd
	lines chan string
}

// startStream starts a verb that runs until interrupted.
func (d *target) startStream(t *testing.T, args ...string) *stream {
	t.Helper()
	cmd := exec.Command(daemontest.Binary(t), args...)
	cmd.Env = daemontest.Environ("SWITCHBOARD_ADDR="+d.addr, "XDG_CONFIG_HOME="+d.configDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &stream{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return s
}

// waitLine returns the first line matching re, failing after a while.
func (s *stream) waitLine(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(connectTimeout)
	var seen []string
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("the stream ended without a line matching %q; it printed:\n%s", re, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if rx.MatchString(l) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line matching %q; the stream printed:\n%s", re, strings.Join(seen, "\n"))
		}
	}
}

// printsSoon reports whether the stream prints a line matching re within
// a few seconds, for a caller that tries again if it does not.
func (s *stream) printsSoon(re string) bool {
	rx := regexp.MustCompile(re)
	timeout := time.After(3 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return false
			}
			if rx.MatchString(l) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// waitLines waits for a line matching each of res, in any order, failing
// after a while.
func (s *stream) waitLines(t *testing.T, res ...string) {
	t.Helper()
	var rxs []*regexp.Regexp
	for _, re := range res {
		rxs = append(rxs, regexp.MustCompile(re))
	}
	timeout := time.After(connectTimeout)
	var seen []string
	for len(rxs) > 0 {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("the stream ended without lines matching %q; it printed:\n%s", rxs, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			rxs = slices.DeleteFunc(rxs, func(rx *regexp.Regexp) bool { return rx.MatchString(l) })
		case <-timeout:
			t.Fatalf("no lines matching %q; the stream printed:\n%s", rxs, strings.Join(seen, "\n"))
		}
	}
}

// interrupt sends Ctrl-C and requires a clean exit.
func (s *stream) interrupt(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGINT)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("after Ctrl-C: %v", err)
	}
}

// stamp is the time a followed log or an event line starts with.
const stamp = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`

// TestCLIDailyUse runs the verbs of daily use against one daemon.
func TestCLIDailyUse(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	// The server's command is ./mytool in the user's directory, which is
	// not the daemon's.
	dir := t.TempDir()
	if err := os.Symlink(testserver.Binary(t), filepath.Join(dir, "mytool")); err != nil {
		t.Fatal(err)
	}

	t.Run("a relative command is found where the user is", func(t *testing.T) {
		r := d.runIn(t, dir, "check", "--command", "./mytool")
		if r.code != 0 || !strings.Contains(r.stdout, "connected") {
			t.Fatalf("check --command ./mytool: %s", r)
		}
		r = d.runIn(t, dir, "server", "add", "rel", "--command", "./mytool", "--env", "API_KEY="+secret, "--wait")
		if r.code != 0 || !regexp.MustCompile(`(?m)^rel connected: \d+ tools \(stdio, protocol [0-9-]+, pid \d+\)$`).MatchString(r.stdout) {
			t.Fatalf("server add --command ./mytool --wait: %s", r)
		}
		if v := d.view(t, "rel"); v.Command != filepath.Join(dir, "mytool") {
			t.Errorf("the command was sent as %q, want the absolute path", v.Command)
		}
		r = d.runIn(t, dir, "server", "add", "rel-cwd", "--command", "./mytool", "--cwd", ".", "--disabled")
		if v := d.view(t, "rel-cwd"); r.code != 0 || v.Cwd != dir || v.Command != filepath.Join(dir, "mytool") {
			t.Errorf("--cwd .: %s; command %q cwd %q", r, v.Command, v.Cwd)
		}
		d.ok(t, "server", "rm", "rel-cwd")
	})

	t.Run("--wait reports a failed first attempt and exits non-zero", func(t *testing.T) {
		r := d.fail(t, []string{"broken: the first connection attempt failed in phase spawn (process_exited)", "exit-at-startup"},
			"server", "add", "broken", "--command", testserver.Binary(t), "--arg", "-exit-at-startup", "--arg", "1", "--wait")
		contains(t, "add --wait of a broken server", r.stdout, "added broken")
		r = d.fail(t, []string{"command_not_found", `hint: the daemon looks "switchboard-no-such-command" up in the PATH`},
			"server", "add", "nowhere", "--command", "switchboard-no-such-command", "--wait", "--wait-timeout", "20s")
		contains(t, "add of a command on no PATH", r.stderr, `warning: "switchboard-no-such-command" is not on this shell's PATH either`)
		d.fail(t, []string{"--wait-timeout goes with --wait"}, "server", "add", "x", "--command", "x", "--wait-timeout", "1s")
		d.ok(t, "server", "rm", "nowhere")
	})

	t.Run("list -o wide prints the whole error", func(t *testing.T) {
		d.waitStatus(t, "broken", sb.StatusConnecting, func(v sb.ServerView) bool { return v.Runtime.Error != nil })
		// The server keeps retrying: its error names the pid of the
		// latest attempt, which may be a newer one by the time it is listed.
		pid := regexp.MustCompile(`pid \d+`)
		whole := pid.ReplaceAllString(d.view(t, "broken").Runtime.Error.Message, "pid N")
		r := d.ok(t, "server", "list")
		contains(t, "server list", r.stdout, "…", "errors cut to fit")
		if strings.Contains(pid.ReplaceAllString(r.stdout, "pid N"), whole) {
			t.Errorf("server list printed the whole error: %s", r.stdout)
		}
		r = d.ok(t, "server", "list", "-o", "wide")
		contains(t, "server list -o wide", pid.ReplaceAllString(r.stdout, "pid N"), "PID", "CODE", "process_exited", whole)
		d.ok(t, "server", "disable", "broken")
	})

	t.Run("edit changes what it names and keeps the secret", func(t *testing.T) {
		before := d.view(t, "rel")
		r := d.ok(t, "server", "edit", "rel", "--call-timeout", "45s", "--wait")
		contains(t, "edit --call-timeout --wait", r.stdout, "edited rel (version 2)", "rel is connected (its connection was kept)")
		v := d.view(t, "rel")
		if v.CallTimeoutMS != 45000 || v.Env["API_KEY"] != sb.SecretMask || v.Runtime.PID != before.Runtime.PID || v.Command != before.Command {
			t.Errorf("after edit: call timeout %d, env %v, pid %d -> %d, command %q", v.CallTimeoutMS, v.Env, before.Runtime.PID, v.Runtime.PID, v.Command)
		}
		d.fail(t, []string{`env: value of API_KEY is "***" but the arguments changed`, "give each again: --env K=V"},
			"server", "edit", "rel", "--arg", "-name", "--arg", "renamed")
		r = d.ok(t, "server", "edit", "rel", "--arg", "-name", "--arg", "renamed", "--env", "API_KEY="+secret, "--wait", "-o", "json")
		var after sb.ServerView
		if err := json.Unmarshal([]byte(r.stdout), &after); err != nil {
			t.Fatalf("edit --wait -o json: %v\n%s", err, r)
		}
		if after.Runtime.Status != sb.StatusConnected || after.Runtime.ServerInfo == nil || after.Runtime.ServerInfo.Name != "renamed" || !after.IsEnabled() {
			t.Errorf("edit --wait -o json: %+v", after.Runtime)
		}
		d.fail(t, []string{"nothing to change"}, "server", "edit", "rel")
		d.fail(t, []string{"--unset-env NOPE: the server has no env variable NOPE"}, "server", "edit", "rel", "--unset-env", "NOPE")
		d.fail(t, []string{"not_found:", `no server named "nope"`}, "server", "edit", "nope", "--call-timeout", "1s")
	})

	t.Run("restart and enable --wait", func(t *testing.T) {
		pid := d.view(t, "rel").Runtime.PID
		r := d.ok(t, "server", "restart", "rel", "--wait")
		contains(t, "restart --wait", r.stdout, "restarting rel", "rel connected:")
		if d.view(t, "rel").Runtime.PID == pid {
			t.Error("restart --wait returned before the new process connected")
		}
		d.ok(t, "server", "disable", "rel")
		r = d.ok(t, "server", "enable", "rel", "--wait")
		contains(t, "enable --wait", r.stdout, "enabled rel", "rel connected:")
		d.fail(t, []string{"disabled:"}, "server", "restart", "broken", "--wait")
	})

	t.Run("logs -f stamps new lines and marks restarts", func(t *testing.T) {
		s := d.startStream(t, "server", "logs", "rel", "-f", "-n", "1")
		s.waitLine(t, `^testserver: `) // the kept line, as it is
		time.Sleep(100 * time.Millisecond)
		d.ok(t, "call", "rel/echo", `{"text": "x"}`)
		s.waitLine(t, `^`+stamp+` testserver: call echo$`)
		d.ok(t, "server", "restart", "rel")
		s.waitLine(t, `^`+stamp+` --- starting \(attempt 1\)$`)
		// The process's first line and the marker of its connection come
		// in either order: its stderr is read apart from the handshake.
		s.waitLines(t, `^`+stamp+` testserver: started pid=\d+`, `^`+stamp+` --- connected`)
		s.interrupt(t)

		d.ok(t, "server", "add", "remote", "--url", "http://127.0.0.1:9/mcp", "--disabled")
		r := d.ok(t, "server", "logs", "remote")
		if r.stdout != "" || !strings.Contains(r.stderr, "remote is a remote server") || !strings.Contains(r.stderr, "no stderr lines") {
			t.Errorf("logs of a remote server: %s", r)
		}
		d.ok(t, "server", "rm", "remote")
	})

	t.Run("events prints one line per event", func(t *testing.T) {
		s := d.startStream(t, "events", "rel", "probe")
		js := d.startStream(t, "events", "-o", "json")
		// A stream is subscribed once it has printed an event: a probe
		// server's creation, made again until both streams have printed
		// one (a started process may take a while to subscribe).
		for i := 0; ; i++ {
			if i == 10 {
				t.Fatal("the event streams printed no probe server's creation")
			}
			d.ok(t, "server", "add", "probe", "--url", "http://127.0.0.1:9/mcp", "--disabled")
			sOK := s.printsSoon(` probe created `)
			jsOK := js.printsSoon(`"server":"probe"`)
			d.ok(t, "server", "rm", "probe")
			if sOK && jsOK {
				break
			}
		}
		d.ok(t, "server", "restart", "rel")
		s.waitLine(t, `^`+stamp+` rel restarted \(status connected -> connecting\)$`)
		s.waitLine(t, `^`+stamp+` rel starting \(attempt 1\)$`)
		s.waitLine(t, `^`+stamp+` rel connected \(status connecting -> connected\)$`)
		var ev sb.Event
		if err := json.Unmarshal([]byte(js.waitLine(t, `"reason":"connected"`)), &ev); err != nil || ev.Server != "rel" {
			t.Errorf("events -o json: %+v, %v", ev, err)
		}
		s.interrupt(t)
		js.interrupt(t)
	})

	t.Run("-o json on every verb, --json its alias", func(t *testing.T) {
		for _, args := range [][]string{
			{"server", "list"}, {"server", "show", "rel"}, {"tools"}, {"tools", "rel"}, {"server", "logs", "rel"},
			{"server", "test", "rel"}, {"version"}, {"call", "rel/echo", `{"text": "j"}`},
		} {
			for _, flag := range [][]string{{"-o", "json"}, {"--json"}} {
				r := d.ok(t, append(append([]string{}, args...), flag...)...)
				if !json.Valid([]byte(r.stdout)) {
					t.Errorf("switchboard %s %s: not JSON: %s", strings.Join(args, " "), flag[0], r)
				}
			}
		}
		r := d.run(t, nil, "", "check", "--command", testserver.Binary(t), "-o", "json")
		if r.code != 0 || !json.Valid([]byte(r.stdout)) {
			t.Errorf("check -o json: %s", r)
		}
		d.fail(t, []string{`invalid argument "yaml"`, "want text, wide or json"}, "server", "list", "-o", "yaml")
	})

	t.Run("completion asks the daemon", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
			not  string
		}{
			{[]string{"server", "show", ""}, []string{"rel\tconnected", "broken\tdisabled", ":4"}, ""},
			{[]string{"server", "logs", "re"}, []string{"rel\tconnected"}, "broken"},
			{[]string{"server", "show", "rel", ""}, []string{":4"}, "rel"},
			{[]string{"call", ""}, []string{"rel/\tconnected", ":6"}, ""},
			{[]string{"call", "rel/ec"}, []string{"rel/echo\t"}, "rel/slow"},
			{[]string{"tools", ""}, []string{"rel\tconnected"}, ""},
			{[]string{"events", "rel", ""}, []string{"broken\tdisabled"}, "rel\t"},
		} {
			r := d.ok(t, append([]string{"__complete"}, tc.args...)...)
			contains(t, "completion of "+strings.Join(tc.args, " "), r.stdout, tc.want...)
			if tc.not != "" && strings.Contains(r.stdout, tc.not) {
				t.Errorf("completion of %q offers %q:\n%s", tc.args, tc.not, r.stdout)
			}
		}
		// No daemon: nothing, and no file names either.
		none := &target{addr: "127.0.0.1:9"}
		r := none.run(t, nil, "", "__complete", "server", "show", "")
		if r.code != 0 || strings.TrimSpace(r.stdout) != ":4" {
			t.Errorf("completion without a daemon: %s", r)
		}
	})

	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, out := range append(d.outputs, "serve log:\n"+d.serve.Logs()) {
			if strings.Contains(out, secret) {
				t.Errorf("the secret appears in an output:\n%s", out)
			}
		}
	})

	t.Run("version", func(t *testing.T) {
		want := regexp.MustCompile(`^switchboard \S+ \(.*go1\.\d+`)
		for _, args := range [][]string{{"version"}, {"--version"}} {
			if r := d.ok(t, args...); !want.MatchString(r.stdout) {
				t.Errorf("switchboard %s: %s", args[0], r)
			}
		}
		var bi buildinfo.Info
		if err := json.Unmarshal([]byte(d.ok(t, "version", "-o", "json").stdout), &bi); err != nil || bi.Version == "" || !strings.HasPrefix(bi.Go, "go") {
			t.Errorf("version -o json: %+v, %v", bi, err)
		}
	})
}
