package upstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestTransientStatusAnswerToACall: a tool call over Streamable HTTP or
// SSE whose POST draws HTTP 429, 503 or 502 fails as the server's answer
// naming the status, and whether the call ran, and the next call goes
// through. Over Streamable HTTP the go-sdk reports these as its own
// JSON-RPC error -32005 ("rejected by transport"), which is neither an
// answer of the server's nor a lost connection: the session stays
// connected. Over SSE it fails the write, and with it the connection,
// which the session re-establishes.
func TestTransientStatusAnswerToACall(t *testing.T) {
	for _, tc := range []struct {
		transport sb.Transport
		path      string
	}{{sb.TransportStreamableHTTP, "/mcp"}, {sb.TransportSSE, "/sse"}} {
		t.Run(string(tc.transport), func(t *testing.T) {
			srv := testserver.StartHTTP(t)
			proxy := newSwitchProxy(t, srv.BaseURL)
			cfg := &sb.ServerConfig{Name: "test", Transport: tc.transport, URL: proxy.srv.URL + tc.path}
			// Each SSE drop is a transparent reconnect, never a backoff.
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1, FlapWindow: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantStatusAnswers(t, s, proxy)
			if info := s.Info(); tc.transport == sb.TransportStreamableHTTP && (info.Status != sb.StatusConnected || info.Reconnects != 0) {
				t.Fatalf("after the status answers: %+v; the connection was fine", info)
			}
		})
	}
}

// wantStatusAnswers has proxy answer one call of s's with each transient
// status, and checks what the call says, and that the next call goes
// through.
func wantStatusAnswers(t *testing.T, s *upstream.Session, proxy *switchProxy) {
	t.Helper()
	for _, tc := range []struct {
		status int
		want   string
	}{
		{429, "HTTP 429 Too Many Requests (it is rate limiting); the call did not run"},
		{503, "HTTP 503 Service Unavailable; the call did not run"},
		{502, "HTTP 502 Bad Gateway, usually a proxy's answer; the call may or may not have reached the server"},
	} {
		proxy.status.Store(int32(tc.status))
		_, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{})
		proxy.status.Store(0)
		var ce *upstream.CallError
		var se *upstream.HTTPStatusError
		if !errors.As(err, &ce) || !errors.Is(err, upstream.ErrServerError) || ce.Phase != sb.PhaseToolCall ||
			!errors.As(err, &se) || se.StatusCode != tc.status || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("HTTP %d: err = %v, want ErrServerError in phase tool_call saying %q", tc.status, err, tc.want)
		}
		if _, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err != nil {
			t.Fatalf("the call after HTTP %d: %v", tc.status, err)
		}
	}
}
