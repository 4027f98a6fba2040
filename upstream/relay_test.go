package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A call on a byte-stream link comes back as the server's bytes, progress
// and timeouts work as for any call, and the result decodes to what the
// server sent.
func TestCallOnAByteStreamKeepsTheServersBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		s, _ := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"héllo"}`), sb.InvokeOptions{})
		if err != nil || res == nil || res.IsError {
			t.Fatalf("relayed echo: %v %+v", err, res)
		}
		var got mcp.CallToolResult
		if err := json.Unmarshal(res.Raw, &got); err != nil || len(got.Content) == 0 || got.Content[0].(*mcp.TextContent).Text != "héllo" {
			t.Fatalf("raw result %s (%v)", res.Raw, err)
		}

		var progress []float64
		res, err = s.CallTool(ctx, "slow", map[string]any{"duration_ms": 50, "interval_ms": 10},
			sb.InvokeOptions{OnProgress: func(p sb.Progress) { progress = append(progress, p.Progress) }})
		if err != nil || res.Raw == nil || len(progress) != 5 {
			t.Errorf("slow: %v, result %+v, progress %v (want 5 notifications before the result)", err, res, progress)
		}

		res, err = s.CallTool(ctx, "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{Timeout: time.Second})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || res != nil {
			t.Errorf("sleep past its timeout: %v, result %+v; want a *TimeoutError and no result", err, res)
		}

		// Results longer than the reader's buffer, growing and shrinking:
		// each comes back whole.
		for _, n := range []int{100 << 10, 10 << 10, 200 << 10, 5, 150 << 10} {
			res, err := s.CallTool(ctx, "big", map[string]any{"bytes": n}, sb.InvokeOptions{})
			if err != nil {
				t.Fatalf("big %d: %v", n, err)
			}
			var got mcp.CallToolResult
			if err := json.Unmarshal(res.Raw, &got); err != nil || len(got.Content) != 1 || len(got.Content[0].(*mcp.TextContent).Text) != n {
				t.Fatalf("big %d: raw result of %d bytes (%v)", n, len(res.Raw), err)
			}
		}

		// A tool error comes back as one, with its result.
		res, err = s.CallTool(ctx, "fail", map[string]any{"message": "no luck"}, sb.InvokeOptions{})
		if !errors.Is(err, upstream.ErrToolError) || res == nil || !res.IsError || res.Raw == nil {
			t.Errorf("fail: %v, %+v; want a tool error with its result", err, res)
		}

		// A result that only mentions isError in its text is no error.
		if res, err := s.CallTool(ctx, "echo", map[string]any{"text": `{"isError":true}`}, sb.InvokeOptions{}); err != nil || res.IsError || res.Raw == nil {
			t.Errorf("echo of an isError text: %v, %+v", err, res)
		}

		// The session is still usable.
		if res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil ||
			res.MustDecode().Content[0].(*mcp.TextContent).Text != "x" {
			t.Errorf("go-sdk echo after the relayed calls: %v %+v", err, res)
		}
	})
}
