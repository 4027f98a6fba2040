package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/toolsearch"
	"github.com/switchboard-mcp/switchboard/toolsearch/toolsearchtest"
)

// finder is a search-mode toolset of three tools of two servers, one of
// them renamed and described anew.
var finder = sb.Toolset{Name: "finder", Mode: sb.ModeSearch,
	Tools: []sb.Selector{
		{Server: "alpha", Tool: "echo", As: "say", Description: "Repeats the words it is given."},
		{Server: "alpha", Tool: "slow"},
		{Server: "alpha", Tool: "elicit"},
		{Server: "beta", Tool: "add"},
	},
}

// found is what search_tools returned.
type found struct {
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
}

// search calls search_tools and returns the names found, in order.
func search(t *testing.T, cs *mcp.ClientSession, query string, limit int) ([]string, found) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: gateway.SearchToolName,
		Arguments: map[string]any{"query": query, "limit": limit}})
	if err != nil {
		t.Fatalf("search_tools %q: %v", query, err)
	}
	if res.IsError {
		t.Fatalf("search_tools %q: %s", query, res.Content[0].(*mcp.TextContent).Text)
	}
	var f found
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &f); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range f.Tools {
		names = append(names, tool.Name)
	}
	return names, f
}

// callThrough calls call_tool.
func callThrough(cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: gateway.CallToolName,
		Arguments: map[string]any{"name": name, "arguments": args}})
}

// A search-mode toolset lists search_tools and call_tool only; a search
// finds the selected tools under their exposed names with their input
// schemas and overrides, and never a tool the toolset leaves out, which
// call_tool cannot reach either (nor tools/call, by any name), on both
// protocol generations.
func TestSearchModeToolsetFindsAndCallsOnlyItsSelection(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	if _, err := e.toolsets.Create(context.Background(), &finder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("finder-bot", sb.ToolsetScope("finder"))
	for _, version := range []string{"2025-11-25", ""} {
		name := version
		if name == "" {
			name = "2026-07-28 stateless"
		}
		t.Run(name, func(t *testing.T) {
			cs, err := e.connectAs("/toolsets/finder/mcp", tok, version)
			if err != nil {
				t.Fatal(err)
			}
			checkFinder(t, cs)
		})
	}
}

func checkFinder(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range list.Tools {
		listed = append(listed, tool.Name)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, []string{gateway.CallToolName, gateway.SearchToolName}) {
		t.Fatalf("listed %v, want only call_tool and search_tools", listed)
	}

	names, f := search(t, cs, "sum of two numbers", 5)
	if len(names) == 0 || names[0] != "beta__add" {
		t.Fatalf("searching for a sum found %v, want beta__add first", names)
	}
	if !strings.Contains(string(f.Tools[0].InputSchema), `"a"`) {
		t.Errorf("beta__add's input schema %s lacks its arguments", f.Tools[0].InputSchema)
	}
	// The rename and the new description are what is searched and shown.
	names, f = search(t, cs, "repeat my words", 5)
	if len(names) == 0 || names[0] != "say" || f.Tools[0].Description != "Repeats the words it is given." {
		t.Fatalf("searching by the new description found %+v, want say with it", f)
	}
	// Hidden tools are never found, whatever the query says.
	for _, q := range []string{"process id", "pid", "adds two numbers alpha", "echo returns its text argument",
		"crash exits the server process", "sleeps milliseconds"} {
		names, _ := search(t, cs, q, 50)
		for _, n := range names {
			if !slices.Contains([]string{"say", "alpha__slow", "alpha__elicit", "beta__add"}, n) {
				t.Errorf("searching %q found %s, which the toolset does not select", q, n)
			}
		}
	}

	if got := text(t)(callThrough(cs, "beta__add", map[string]any{"a": 2, "b": 3}, nil)); got != "5" {
		t.Errorf("call_tool beta__add = %q, want 5", got)
	}
	if got := text(t)(callThrough(cs, "say", map[string]any{"text": "hi"}, nil)); got != "hi" {
		t.Errorf("call_tool say = %q, want hi", got)
	}
	for _, hidden := range []string{"echo", "alpha__echo", "alpha__add", "add", "pid", "alpha__pid", "beta__echo", "search_tools", "call_tool"} {
		res, err := callThrough(cs, hidden, map[string]any{"text": "x", "a": 1, "b": 2}, nil)
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "unknown tool") {
			t.Errorf("call_tool of the hidden %s: %+v, %v; want the unknown tool error", hidden, res, err)
		}
	}
	// The catalog's names are not tools of this endpoint.
	for _, direct := range []string{"beta__add", "say", "alpha__add"} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: direct, Arguments: map[string]any{"a": 1, "b": 2, "text": "x"}}); err == nil {
			t.Errorf("tools/call %s on a search-mode endpoint: %+v, want unknown tool", direct, res)
		}
	}
}

// call_tool goes the normal path of a call: the upstream's progress
// reaches the caller's progress token, and its elicitation the caller.
func TestSearchModeCallCarriesProgressAndElicitation(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	if _, err := e.toolsets.Create(context.Background(), &finder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("finder-bot", sb.ToolsetScope("finder"))
	progress := make(chan float64, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- r.Params.Progress:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "asked: " + r.Params.Message}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/toolsets/finder/mcp",
		HTTPClient: &http.Client{Transport: bearer(tok)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	res, err := callThrough(cs, "alpha__slow", map[string]any{"duration_ms": 30, "interval_ms": 10}, mcp.Meta{"progressToken": "p1"})
	if err != nil || res.IsError {
		t.Fatalf("call_tool alpha__slow: %+v, %v", res, err)
	}
	// The client handles notifications on a goroutine of its own: the
	// first may be handled after the result.
	select {
	case <-progress:
	case <-time.After(time.Minute):
		t.Error("no progress reached the caller of call_tool")
	}
	got := text(t)(callThrough(cs, "alpha__elicit", map[string]any{"message": "color?"}, nil))
	if !strings.Contains(got, "color?") {
		t.Errorf("call_tool alpha__elicit = %q, want the caller's answer to the question", got)
	}
}

// serve --mcp-mode search: /mcp lists the two tools, finds every server's
// tools under their aggregated names and calls them; Gateway.Search finds
// them by their servers' names; the per-server endpoints still list.
func TestMCPSearchMode(t *testing.T) {
	e := newEnvWith(t, gateway.Options{ResyncInterval: time.Second, MCPMode: sb.ModeSearch}, stdio(t, "alpha"), stdio(t, "beta"))
	for _, version := range []string{"2025-11-25", ""} {
		t.Run(version, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			names, _ := search(t, cs, "return the process id of the server", 3)
			if len(names) < 2 || !slices.Contains(names[:2], "alpha__pid") || !slices.Contains(names[:2], "beta__pid") {
				t.Fatalf("found %v, want alpha__pid and beta__pid first", names)
			}
			if got := text(t)(callThrough(cs, "beta__add", map[string]any{"a": 20, "b": 22}, nil)); got != "42" {
				t.Errorf("call_tool beta__add = %q", got)
			}
		})
	}
	hits := gwSearch(t, e.gw, "adds two numbers", 2)
	if len(hits) != 2 || hits[0].Name != "add" || hits[1].Name != "add" || hits[0].Server == hits[1].Server {
		t.Errorf("Gateway.Search = %+v, want add of both servers", hits)
	}
	per := e.connect("/mcp/alpha", nil)
	waitTools(t, per, "echo", "add")

	// GET /api/v1/tools?search=, as serve wires it.
	resp, err := http.Get(e.url + "/api/v1/tools?search=" + url.QueryEscape("adds two numbers") + "&limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []map[string]any `json:"tools"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || len(body.Tools) != 1 || body.Tools[0]["name"] != "add" || body.Tools[0]["description"] != "Adds two numbers." ||
		body.Tools[0]["score"] == nil || body.Tools[0]["server"] != "alpha" {
		t.Errorf("GET /api/v1/tools?search=: %+v, %v; want alpha's add (ties by server name)", body, err)
	}
	for _, q := range []string{"search=", "search=add&limit=0", "search=add&limit=101", "search=add&limit=x"} {
		resp, err := http.Get(e.url + "/api/v1/tools?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /api/v1/tools?%s: %d, want 400", q, resp.StatusCode)
		}
	}
}

// A toolset switched between the modes shows the catalog, then the two
// tools, then the catalog again, to the session it already has.
func TestToolsetModeSwitch(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"))
	ctx := context.Background()
	ts := sb.Toolset{Name: "flip", Tools: []sb.Selector{{Server: "alpha", Tool: "add"}}}
	if _, err := e.toolsets.Create(ctx, &ts); err != nil {
		t.Fatal(err)
	}
	cs, err := e.connectAs("/toolsets/flip/mcp", adminToken, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "alpha__add")
	for _, mode := range []string{sb.ModeSearch, sb.ModeCatalog} {
		ts.Mode = mode
		if _, err := e.toolsets.Update(ctx, ts.Name, &ts, 0); err != nil {
			t.Fatal(err)
		}
		want := []string{"alpha__add"}
		if mode == sb.ModeSearch {
			want = []string{gateway.CallToolName, gateway.SearchToolName}
		}
		got := waitTools(t, cs, want...)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("mode %s: listed %v, want %v", mode, got, want)
		}
	}
}

// waitFound searches until find reports the tool, or fails after a
// generous bound: a server's list_changed reaches the index through the
// gateway's change window.
func waitFound(t *testing.T, what string, find func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !find(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s was never found", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A tool a server adds (tools/list_changed) is found and callable once
// the gateway has its new list: by search_tools in search mode, and by
// Gateway.Search in catalog mode, whose index is made on the first search
// and kept in step from then on.
func TestSearchFollowsListChanged(t *testing.T) {
	t.Run("search mode", func(t *testing.T) {
		e := newEnvWith(t, gateway.Options{ResyncInterval: time.Hour, MCPMode: sb.ModeSearch}, stdio(t, "alpha"), stdio(t, "beta"))
		cs := e.connect("/mcp", nil)
		if names, _ := search(t, cs, "frobnicate", 5); len(names) != 0 {
			t.Fatalf("found %v before the tool exists", names)
		}
		if res, err := callThrough(cs, "alpha__add_tool", map[string]any{"name": "frobnicate"}, nil); err != nil || res.IsError {
			t.Fatalf("add_tool: %+v, %v", res, err)
		}
		waitFound(t, "alpha__frobnicate", func() bool {
			names, _ := search(t, cs, "frobnicate", 5)
			return slices.Equal(names, []string{"alpha__frobnicate"})
		})
		if got := text(t)(callThrough(cs, "alpha__frobnicate", map[string]any{"text": "new"}, nil)); got != "new" {
			t.Errorf("call_tool alpha__frobnicate = %q", got)
		}
	})
	t.Run("catalog mode", func(t *testing.T) {
		e := newEnvWith(t, gateway.Options{ResyncInterval: time.Hour}, stdio(t, "alpha"), stdio(t, "beta"))
		cs := e.connect("/mcp", nil)
		waitTools(t, cs, "alpha__add", "beta__add")
		if hits := gwSearch(t, e.gw, "adds two numbers", 2); len(hits) != 2 || hits[0].Name != "add" || hits[1].Name != "add" {
			t.Fatalf("the first search found %+v, want add of both servers", hits)
		}
		if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta__add_tool", Arguments: map[string]any{"name": "frobnicate"}})); got == "" {
			t.Fatal("add_tool said nothing")
		}
		waitFound(t, "beta's frobnicate", func() bool {
			hits := gwSearch(t, e.gw, "frobnicate", 5)
			return len(hits) == 1 && hits[0].Server == "beta" && hits[0].Name == "frobnicate"
		})
	})
}

// A toolset narrowed while a session is open hides the tool from the
// very next search and call_tool of that session (the endpoint brings a
// stale mirror in step before it serves a request; search and call_tool
// ask the toolset again besides).
func TestSearchModeToolsetNarrowedTakesEffectAtOnce(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	ctx := context.Background()
	ts := finder
	if _, err := e.toolsets.Create(ctx, &ts); err != nil {
		t.Fatal(err)
	}
	cs, err := e.connectAs("/toolsets/finder/mcp", adminToken, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := search(t, cs, "adds two numbers", 5); len(names) == 0 || names[0] != "beta__add" {
		t.Fatalf("before: found %v", names)
	}
	ts.Tools = slices.DeleteFunc(slices.Clone(ts.Tools), func(s sb.Selector) bool { return s.Server == "beta" })
	if _, err := e.toolsets.Update(ctx, ts.Name, &ts, 0); err != nil {
		t.Fatal(err)
	}
	if names, _ := search(t, cs, "adds two numbers", 50); slices.Contains(names, "beta__add") {
		t.Errorf("after the edit: found %v", names)
	}
	if res, err := callThrough(cs, "beta__add", map[string]any{"a": 1, "b": 2}, nil); err != nil || !res.IsError {
		t.Errorf("after the edit: call_tool beta__add = %+v, %v", res, err)
	}
}

// BenchmarkReindexOneServer measures what a server's list_changed costs
// the index: reading 50 tools' schemas for their arguments and indexing
// them (toolsearch.Index.Set), beside 99 other servers' 4,950 tools.
func BenchmarkReindexOneServer(b *testing.B) {
	ix := toolsearch.New()
	catalog := toolsearchtest.Catalog(100, 50)
	var tools []*mcp.Tool
	for s, ts := range catalog {
		ix.Set(s, ts)
		if tools != nil {
			continue
		}
		for _, tool := range ts {
			props := map[string]any{}
			for _, p := range tool.Params {
				props[p.Name] = map[string]any{"type": "string", "description": p.Description}
			}
			schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
			tools = append(tools, &mcp.Tool{Name: tool.Name, Description: tool.Description, InputSchema: json.RawMessage(schema)})
		}
	}
	for b.Loop() {
		ix.Set("billing-00", gateway.SearchDocs(tools))
	}
}

// gwSearch is gw.Search, which must not fail.
func gwSearch(t *testing.T, gw *gateway.Gateway, query string, limit int) []api.ToolHit {
	t.Helper()
	hits, err := gw.Search(context.Background(), query, limit)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Gateway.Search (GET /api/v1/tools?search=) asked while a server's first
// attempt is still under way waits for it, as a client's first tools/list
// does (WaitInStep), and finds its tools.
func TestSearchWaitsForTheFirstAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"slowstart": {After: 2 * time.Second}})
		b := newBubble(t, gateway.Options{}, so, nil, cfgs["slowstart"])
		start := time.Now()
		hits := gwSearch(t, b.gw, "echo", 1)
		if len(hits) != 1 || hits[0].Server != "slowstart" || hits[0].Name != "echo" {
			t.Errorf("a search during the first attempt found %+v, want slowstart's echo", hits)
		}
		if d := time.Since(start); d < 2*time.Second {
			t.Errorf("the search returned after %v, before the first attempt ended (2 s)", d)
		}
	})
}
