package upstream_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestServerEndingTheSessionIsNoticed: a server that ends an idle session
// on its own (it forgets it, closing its streams) is noticed without a
// call or a health probe, over Streamable HTTP (the session is missing:
// expired) and legacy SSE (the stream closed). The stdio counterpart, a
// process that exits, is TestReconnectAfterProcessKilled.
func TestServerEndingTheSessionIsNoticed(t *testing.T) {
	for _, tc := range []struct {
		transport sb.Transport
		path      string
		code      sb.Code
	}{
		{sb.TransportStreamableHTTP, "/mcp", sb.CodeSessionExpired},
		{sb.TransportSSE, "/sse", sb.CodeConnectionClosed},
	} {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: srv.BaseURL + tc.path}
			s, rec := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			adminPost(t, srv, "drop")
			drop := waitEvent(t, rec, func(e sb.Event) bool { return e.Reason == sb.ReasonDropped })
			if drop.Error == nil || drop.Error.Code != tc.code || drop.Error.Phase != sb.PhaseRuntime {
				t.Fatalf("dropped with %+v, want %s in phase runtime", drop.Error, tc.code)
			}
			waitFor(t, s, "the reconnect", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.Reconnects == 1 })
		})
	}
}

// TestIdleStreamableSessionHasNoWatcher: an idle Streamable HTTP session
// keeps no goroutine of its own waiting for its connection to end; the
// go-sdk's connection context says when it does (dialHTTP). Thousands of
// idle remote servers each kept one (a 4 KiB stack).
func TestIdleStreamableSessionHasNoWatcher(t *testing.T) {
	srv := testserver.StartHTTP(t)
	cfg := &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL}
	s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The go-sdk's goroutines of the connection start during Connect; a
	// watcher would have started right after it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		dump := string(buf[:runtime.Stack(buf, true)])
		waiting := 0
		for g := range strings.SplitSeq(dump, "\n\n") {
			if strings.Contains(g, "(*ClientSession).Wait") {
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait on an idle session's connection:\n%s", waiting, dump)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
