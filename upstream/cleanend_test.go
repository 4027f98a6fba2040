package upstream_test

// A connection that the server ends without an error (the go-sdk's Wait
// returns nil when reading ended in EOF) is reported as the server closing
// it, not as an "unknown error".

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// wantCleanEnd checks that the session's last drop says the server closed
// the connection, after prefix.
func wantCleanEnd(t *testing.T, s *upstream.Session, prefix string) {
	t.Helper()
	info := waitFor(t, s, "the drop", func(i sb.RuntimeInfo) bool { return i.LastDrop != nil })
	d := info.LastDrop
	if want := prefix + "the server closed the connection"; d.Code != sb.CodeConnectionClosed || !strings.HasPrefix(d.Message, want) {
		t.Errorf("last drop %s %q, want %s %q", d.Code, d.Message, sb.CodeConnectionClosed, want)
	}
}

// TestInProcessServerClosingIsNamed: an in-process server (Options.Dial)
// that closes its end of the stream.
func TestInProcessServerClosingIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		s, _ := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		d.conn(1).drop()
		wantCleanEnd(t, s, "the connection closed: ")
	})
}

// TestStdioServerClosingItsOutputIsNamed: a stdio server that closes its
// stdout and lives on. Here the command is a shell that runs the test
// server, which fails at the first call; the shell then closes its own copy
// of the pipe and sleeps, deaf to its stdin, until the session kills it.
func TestStdioServerClosingItsOutputIsNamed(t *testing.T) {
	cfg := &sb.ServerConfig{
		Name:      "test",
		Transport: sb.TransportStdio,
		Command:   "/bin/sh",
		Args: []string{"-c", `"$0" "$@" || { exec >&-; exec sleep 300; }`,
			testserver.Binary(t), "-crash-after", "0"},
		ProtocolVersion: "2025-11-25",
	}
	s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err == nil {
		t.Fatal("the call succeeded; want the test server to exit at it")
	}
	wantCleanEnd(t, s, "the connection to /bin/sh (pid "+strconv.Itoa(pid)+") closed: ")
}

// TestSSEStreamEndingIsNamed: a legacy SSE server whose event stream ends
// (the go-sdk reads any end of it as EOF), here because the server is gone.
func TestSSEStreamEndingIsNamed(t *testing.T) {
	srv := testserver.StartHTTP(t)
	s, _ := startRemote(t, srv, "test", sb.TransportSSE, "/sse")
	srv.Kill()
	wantCleanEnd(t, s, "the sse connection to "+srv.BaseURL+"/sse closed: ")
}
