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

		if n := upstream.RelayedCalls() - before; n != 2 {
			t.Errorf("%d calls relayed, want 2 (the timed-out one had no reply)", n)
		}
		// The session is still usable, through the go-sdk too.
		if res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "x"}, sb.InvokeOptions{}); err != nil ||
			res.Content[0].(*mcp.TextContent).Text != "x" {
			t.Errorf("go-sdk echo after the relayed calls: %v %+v", err, res)
		}
	})
}
