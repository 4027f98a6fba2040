package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
)

// TestEditChangesOnlyWhatItIsToldAndKeepsSecrets: EditServer sends the
// view back with the one change, so the masked secret stays as stored; a
// change of destination must send the secret again; an edit raced by
// another is a conflict that changes nothing.
func TestEditChangesOnlyWhatItIsToldAndKeepsSecrets(t *testing.T) {
	c := newDaemon(t)
	ctx := context.Background()
	cfg := stdio(t, "ed")
	cfg.Enabled = new(bool)
	if _, err := c.CreateServer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	v, err := c.EditServer(ctx, "ed", func(cfg *sb.ServerConfig) error { cfg.CallTimeoutMS = 7000; return nil })
	if err != nil || v.CallTimeoutMS != 7000 || v.Version != 2 || v.Env["API_KEY"] != sb.SecretMask || v.Command != cfg.Command {
		t.Fatalf("edit: %+v, %v", v, err)
	}
	res, err := c.TestServer(ctx, "ed") // runs with the stored config: the secret is still there
	if err != nil || res.Runtime.Status != sb.StatusConnected {
		t.Fatalf("test after the edit: %+v, %v", res.Runtime, err)
	}

	_, err = c.EditServer(ctx, "ed", func(cfg *sb.ServerConfig) error { cfg.Args = []string{"-name", "other"}; return nil })
	if ce := wantCode(t, "new arguments with a masked secret", err, http.StatusBadRequest, sb.CodeInvalidConfig); !strings.Contains(ce.Message, "env") {
		t.Errorf("the refusal does not name env: %v", ce)
	}
	v, err = c.EditServer(ctx, "ed", func(cfg *sb.ServerConfig) error {
		cfg.Args = []string{"-name", "other"}
		cfg.Env["API_KEY"] = "client-test-secret"
		return nil
	})
	if err != nil || v.Args[1] != "other" {
		t.Fatalf("new arguments with the secret again: %+v, %v", v, err)
	}

	_, err = c.EditServer(ctx, "ed", func(cfg *sb.ServerConfig) error {
		// Someone else changes it meanwhile.
		if _, err := c.EditServer(ctx, "ed", func(cfg *sb.ServerConfig) error { cfg.CallTimeoutMS = 1000; return nil }); err != nil {
			t.Fatal(err)
		}
		cfg.CallTimeoutMS = 9000
		return nil
	})
	ce := wantCode(t, "a raced edit", err, http.StatusConflict, sb.CodeConflict)
	if !strings.Contains(ce.Message, "since version 3 was read (it is at version 4 now)") {
		t.Errorf("conflict message: %s", ce.Message)
	}
	if v, _ := c.Server(ctx, "ed"); v.CallTimeoutMS != 1000 {
		t.Errorf("the raced edit changed the server: %d", v.CallTimeoutMS)
	}
	refused := errors.New("no")
	if _, err := c.EditServer(ctx, "ed", func(*sb.ServerConfig) error { return refused }); err != refused {
		t.Errorf("an edit function's error: %v", err)
	}
}

// TestWatchAttemptReportsTheFirstOutcome: the outcome of the attempt a
// change starts, connected or failed with its phase, and none to wait for
// when the change left the session as it was.
func TestWatchAttemptReportsTheFirstOutcome(t *testing.T) {
	c := newDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch := func(name string, change func() (*sb.ServerView, error)) (client.Outcome, error) {
		t.Helper()
		w, err := c.WatchAttempt(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		v, err := change()
		if err != nil {
			t.Fatal(err)
		}
		return w.Wait(ctx, v)
	}
	viewOf := func(v sb.ServerView, err error) (*sb.ServerView, error) { return &v, err }

	out, err := watch("good", func() (*sb.ServerView, error) { return viewOf(c.CreateServer(ctx, stdio(t, "good"))) })
	if err != nil || !out.Attempted || out.Error != nil || out.View.Runtime.Status != sb.StatusConnected || out.View.Runtime.ToolCount == 0 {
		t.Fatalf("create: %+v, %v", out, err)
	}
	out, err = watch("bad", func() (*sb.ServerView, error) {
		return viewOf(c.CreateServer(ctx, stdio(t, "bad", "-exit-at-startup", "1")))
	})
	if err != nil || !out.Attempted || out.Error == nil || out.Error.Phase != sb.PhaseSpawn {
		t.Fatalf("a server that exits at startup: %+v, %v", out, err)
	}
	pid := out.View.Runtime.PID
	good, _ := c.Server(ctx, "good")
	out, err = watch("good", func() (*sb.ServerView, error) { return nil, c.RestartServer(ctx, "good") })
	if err != nil || !out.Attempted || out.Error != nil || out.View.Runtime.PID == good.Runtime.PID {
		t.Fatalf("restart: %+v, %v (pid before %d, %d)", out, err, good.Runtime.PID, pid)
	}
	out, err = watch("good", func() (*sb.ServerView, error) {
		return viewOf(c.EditServer(ctx, "good", func(cfg *sb.ServerConfig) error { cfg.CallTimeoutMS = 5000; return nil }))
	})
	if err != nil || out.Attempted || out.View.Runtime.Status != sb.StatusConnected {
		t.Fatalf("an edit that does not reconnect: %+v, %v", out, err)
	}

	// A bounded wait ends with the context.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	w, err := c.WatchAttempt(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Wait(short, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait for nothing: %v", err)
	}
}

// TestFollowLogsStreamsNewLinesAndRestarts: the kept lines come first
// without a time, new lines with the time they were read, and a restart
// as a status event before the new process's lines.
func TestFollowLogsStreamsNewLinesAndRestarts(t *testing.T) {
	c := newDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.CreateServer(ctx, stdio(t, "lg", "-stderr-lines", "5"))
	waitConnected(t, c, "lg")
	s, err := c.FollowLogs(ctx, "lg", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	next := func() client.LogRecord {
		t.Helper()
		r, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 2 {
		if r := next(); r.Event != nil || r.Line.At != nil {
			t.Fatalf("a kept line: %+v", r)
		}
	}
	before := time.Now()
	if _, err := c.Call(ctx, "lg/echo", map[string]any{"text": "x"}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := next(); r.Event != nil || r.Line.Line != "testserver: call echo" || r.Line.At == nil || r.Line.At.Before(before) {
		t.Fatalf("a new line: %+v", r)
	}
	if err := c.RestartServer(ctx, "lg"); err != nil {
		t.Fatal(err)
	}
	var sawStart bool
	for {
		r := next()
		if r.Event != nil && r.Event.Reason == sb.ReasonStarting {
			sawStart = true
		}
		if r.Event == nil && strings.HasPrefix(r.Line.Line, "testserver: started") {
			if !sawStart {
				t.Fatalf("the new process's first line came before its start: %+v", r)
			}
			break
		}
	}
	if err := c.DeleteServer(ctx, "lg", 0); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after delete: %v", err)
		}
		_ = r
	}
}

// TestResolvePathsAsThePersonMeantThem: relative paths are taken against
// the person's directory (a command against the cwd if one is given); a
// bare command name and every remote config are left as they are.
func TestResolvePathsAsThePersonMeantThem(t *testing.T) {
	for _, tc := range []struct{ command, cwd, wantCommand, wantCwd string }{
		{"./mytool", "", "/home/me/proj/mytool", ""},
		{"bin/tool", "", "/home/me/proj/bin/tool", ""},
		{"../tool", "", "/home/me/tool", ""},
		{"/usr/bin/tool", "", "/usr/bin/tool", ""},
		{"npx", "", "npx", ""},
		{"./mytool", "sub", "/home/me/proj/sub/mytool", "/home/me/proj/sub"},
		{"./mytool", "/srv", "/srv/mytool", "/srv"},
		{"npx", "..", "npx", "/home/me"},
	} {
		cfg := &sb.ServerConfig{Transport: sb.TransportStdio, Command: tc.command, Cwd: tc.cwd}
		client.ResolvePaths(cfg, "/home/me/proj")
		if cfg.Command != tc.wantCommand || cfg.Cwd != tc.wantCwd {
			t.Errorf("%q in %q: %q in %q, want %q in %q", tc.command, tc.cwd, cfg.Command, cfg.Cwd, tc.wantCommand, tc.wantCwd)
		}
	}
	remote := &sb.ServerConfig{Transport: sb.TransportRemote, URL: "http://x/mcp", Cwd: "rel"}
	client.ResolvePaths(remote, "/home/me")
	if remote.Cwd != "rel" {
		t.Errorf("a remote config was changed: %+v", remote)
	}
}
