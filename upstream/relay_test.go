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

// A call made with WithRawResult on a byte-stream link is relayed: its
// result comes back as the server's bytes, progress and timeouts work as
// for any call, and what the go-sdk path returns is unchanged beside it.
func TestRelayedCallOnAByteStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		s, _ := newSession(t, memConfig(), &upstream.Options{Dial: d.dial, HealthInterval: -1})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := upstream.RelayedCalls()

		ctx, raw := upstream.WithRawResult(context.Background())
		res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"héllo"}`), sb.InvokeOptions{})
		if err != nil || res == nil || res.IsError {
			t.Fatalf("relayed echo: %v %+v", err, res)
		}
		var got mcp.CallToolResult
		if err := json.Unmarshal(raw.Result, &got); err != nil || len(got.Content) == 0 || got.Content[0].(*mcp.TextContent).Text != "héllo" {
			t.Fatalf("raw result %s (%v)", raw.Result, err)
		}

		var progress []float64
		ctx, raw = upstream.WithRawResult(context.Background())
		_, err = s.CallTool(ctx, "slow", map[string]any{"duration_ms": 50, "interval_ms": 10},
			sb.InvokeOptions{OnProgress: func(p sb.Progress) { progress = append(progress, p.Progress) }})
		if err != nil || raw.Result == nil || len(progress) != 5 {
			t.Errorf("relayed slow: %v, result %s, progress %v (want 5 notifications before the result)", err, raw.Result, progress)
		}

		ctx, raw = upstream.WithRawResult(context.Background())
		_, err = s.CallTool(ctx, "sleep", map[string]any{"ms": 60000}, sb.InvokeOptions{Timeout: time.Second})
		var te *upstream.TimeoutError
		if !errors.As(err, &te) || raw.Result != nil {
			t.Errorf("relayed sleep past its timeout: %v, result %s; want a *TimeoutError and no result", err, raw.Result)
		}

		// Results longer than the reader's buffer, growing and shrinking:
		// each comes back whole.
		for _, n := range []int{100 << 10, 10 << 10, 200 << 10, 5, 150 << 10} {
			ctx, raw = upstream.WithRawResult(context.Background())
			if _, err := s.CallTool(ctx, "big", map[string]any{"bytes": n}, sb.InvokeOptions{}); err != nil {
				t.Fatalf("big %d: %v", n, err)
			}
			var got mcp.CallToolResult
			if err := json.Unmarshal(raw.Result, &got); err != nil || len(got.Content) != 1 || len(got.Content[0].(*mcp.TextContent).Text) != n {
				t.Fatalf("big %d: raw result of %d bytes (%v)", n, len(raw.Result), err)
			}
		}

		// A tool error is relayed as one, with its result.
		ctx, raw = upstream.WithRawResult(context.Background())
		res, err = s.CallTool(ctx, "fail", map[string]any{"message": "no luck"}, sb.InvokeOptions{})
		if !errors.Is(err, upstream.ErrToolError) || res == nil || !res.IsError || raw.Result == nil {
			t.Errorf("relayed fail: %v, %+v, result %s; want a tool error with its result", err, res, raw.Result)
		}

		// A result that only mentions isError in its text is no error.
		ctx, raw = upstream.WithRawResult(context.Background())
		if res, err := s.CallTool(ctx, "echo", map[string]any{"text": `{"isError":true}`}, sb.InvokeOptions{}); err != nil || res.IsError || raw.Result == nil {
			t.Errorf("relayed echo of an isError text: %v, %+v, result %s", err, res, raw.Result)
		}

		if n := upstream.RelayedCalls() - before; n != 9 {
			t.Errorf("%d calls relayed, want 9 (the timed-out one had no reply)", n)
		}
		// The session is still usable, through the go-sdk too.
		if res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil ||
			res.Content[0].(*mcp.TextContent).Text != "x" {
			t.Errorf("go-sdk echo after the relayed calls: %v %+v", err, res)
		}
	})
}
