package gateway_test

// The total cap of a call through the MCP endpoint: a tool that keeps
// reporting progress keeps resetting the call timeout, and only the cap
// ends it.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func TestMCPCallOfAToolThatKeepsReportingProgressIsCapped(t *testing.T) {
	e := newEnvWith(t, gateway.Options{MaxTotalTimeout: time.Second}, stdio(t, "p"))
	cs := e.connect("/mcp", nil)
	waitTools(t, cs, "p__slow")
	params := &mcp.CallToolParams{Name: "p__slow", Arguments: map[string]any{"duration_ms": 20000, "interval_ms": 100}}
	params.SetProgressToken("t")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	checkTotalTimeout(t, res, time.Second)
}

// checkTotalTimeout fails unless res is the isError result of a call cut
// off by a total cap of limit.
func checkTotalTimeout(t *testing.T, res *mcp.CallToolResult, limit time.Duration) {
	t.Helper()
	meta, _ := res.Meta["switchboard/error"].(map[string]any)
	if !res.IsError || meta["code"] != string(sb.CodeTimeout) || meta["limit"] != upstream.LimitTotal {
		t.Fatalf("result %+v (_meta %v), want an isError result with code timeout, limit total", res, res.Meta)
	}
	if msg := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(msg, fmt.Sprintf("total timeout of %s", limit)) {
		t.Errorf("message %q does not name the total timeout of %s", msg, limit)
	}
}

func TestMCPCallTotalCap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gateway   time.Duration // Options.MaxTotalTimeout
		serverMS  int64         // the server's max_total_timeout_ms
		wantLimit time.Duration // 0: no cap, the call completes
	}{
		{"default", 0, 0, gateway.DefaultMaxTotalTimeout},
		{"configured", 3 * time.Minute, 0, 3 * time.Minute},
		{"the server's own, longer", 0, 20 * 60_000, 20 * time.Minute},
		{"the server's own, shorter", 3 * time.Minute, 60_000, time.Minute},
		{"none", -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfgs, so := fleet(t, map[string]testserver.Script{"p": {}})
				cfgs["p"].MaxTotalTimeoutMS = tc.serverMS
				b := newBubble(t, gateway.Options{MaxTotalTimeout: tc.gateway}, so, nil, cfgs["p"])
				time.Sleep(time.Second) // p is listed
				// Progress every second keeps resetting the 60 s call
				// timeout for 30 minutes.
				params := &mcp.CallToolParams{Name: "p__slow", Arguments: map[string]any{"duration_ms": 30 * 60_000, "interval_ms": 1000}}
				params.SetProgressToken("t")
				start := time.Now()
				res, err := b.cs.CallTool(context.Background(), params)
				if err != nil {
					t.Fatal(err)
				}
				d := time.Since(start)
				if tc.wantLimit == 0 {
					if res.IsError || d != 30*time.Minute {
						t.Fatalf("after %v: %+v, want the result after 30m", d, res)
					}
					return
				}
				checkTotalTimeout(t, res, tc.wantLimit)
				if d != tc.wantLimit {
					t.Errorf("cut off after %v, want %v", d, tc.wantLimit)
				}
			})
		})
	}
}
