package httpapi_test

import (
	"context"
	"path/filepath"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
)

// TestStatsCountTheCallsOfTheHour: the calls a server served, failed ones
// among them, are counted in its current minute and in the daemon's; an
// unknown server is a 404; a deleted server's calls are not a new one's.
func TestStatsCountTheCallsOfTheHour(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	ctx := context.Background()
	e.do("POST", "/api/v1/servers", stdioServer(t, "tools"), nil)
	e.do("POST", "/api/v1/servers", stdioServer(t, "quiet"), nil)
	e.waitStatus("tools", sb.StatusConnected)
	for range 3 {
		if _, err := e.c.Call(ctx, "tools/add", map[string]any{"a": 1, "b": 2}, client.CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := e.c.Call(ctx, "tools/fail", map[string]any{"message": "no"}, client.CallOptions{}); err == nil && !res.IsError {
		t.Fatalf("tools/fail succeeded: %+v", res)
	}

	st, err := e.c.ServerStats(ctx, "tools")
	if err != nil {
		t.Fatal(err)
	}
	now := st.Minutes[len(st.Minutes)-1]
	if len(st.Minutes) != api.StatsMinutes || st.Calls != 4 || st.Errors != 1 || now.Calls != 4 || now.Errors != 1 {
		t.Fatalf("stats of tools: %d minutes, hour %+v, this minute %+v; want %d, 4 calls and 1 error in both",
			len(st.Minutes), st.StatsSummary, now.StatsSummary, api.StatsMinutes)
	}
	if st.P50MS <= 0 || st.P99MS < st.P50MS {
		t.Errorf("latency p50 %v ms, p99 %v ms", st.P50MS, st.P99MS)
	}
	all, err := e.c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if all.Calls != 4 || all.Server != "" || len(all.Servers) != 2 || all.Servers[0].Server != "quiet" || all.Servers[1].Calls != 4 {
		t.Errorf("the daemon's stats: %+v, servers %+v", all.StatsSummary, all.Servers)
	}

	var eb api.ErrorBody
	if code, body := e.do("GET", "/api/v1/servers/nope/stats", nil, &eb); code != 404 || eb.Error.Code != sb.CodeNotFound {
		t.Errorf("stats of an unknown server: %d %s", code, body)
	}
	v, _ := e.c.Server(ctx, "tools")
	if err := e.c.DeleteServer(ctx, "tools", v.Version); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/v1/servers", stdioServer(t, "tools"), nil)
	if st, err := e.c.ServerStats(ctx, "tools"); err != nil || st.Calls != 0 {
		t.Errorf("a new server under a deleted one's name: %d calls, %v", st.Calls, err)
	}
}
