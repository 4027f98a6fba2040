package gateway

// An endpoint in search mode (a toolset with "mode": "search", /mcp with
// Options.MCPMode) lists two tools instead of its catalog: search_tools,
// which finds the tools the endpoint shows by a query of plain words and
// returns them with their input schemas, and call_tool, which calls one
// of them by the name search_tools gave. The mirror still keeps the
// catalog it would list (m.tools, m.shown: the toolset's selection, under
// its exposed names, with its overrides), and indexes it (m.index), so:
//
//   - a search finds only what the endpoint shows, scored among only
//     those: a tool a toolset does not select is never in its index, and
//     the toolset is asked again (sb.Toolset.Allows) for every tool a
//     search would score and every call_tool, as it is at that moment;
//   - call_tool reaches a tool by the same lookup a tools/call of the
//     catalog makes, and calls it through Gateway.call: the server's
//     timeouts, progress, cancellation, elicitation and sampling, the
//     executor's metrics;
//   - nothing is kept per session: a stateless 2026-07-28 request is
//     served like a stateful one, its scope being its endpoint's, which
//     the API checked against the request's principal.
//
// The relay (relay.go) serves no call of a search-mode mirror: its two
// tools are the go-sdk's, and a catalog name is not listed, so not
// callable directly.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/toolsearch"
)

// The tools of an endpoint in search mode.
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
)

// Bounds of search_tools' limit.
const (
	DefaultSearchLimit = 5
	MaxSearchLimit     = 50
)

var (
	searchTool = &mcp.Tool{
		Name: SearchToolName,
		Description: "Search the tools available here by what they do, in plain words " +
			`(e.g. "read a file", "create a github issue"). Returns the best matches, each with its name, ` +
			"description and input schema; call one with call_tool.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What the tool should do, in plain words."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to return (default 5)."}},` +
			`"required":["query"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptrFalse()},
	}
	callTool = &mcp.Tool{
		Name:        CallToolName,
		Description: "Call a tool that search_tools found, by its name, with arguments that fit its input schema.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name, as search_tools returned it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments."}},` +
			`"required":["name"]}`),
	}
)

func ptrFalse() *bool { f := false; return &f }

// setSearch puts the mirror in search mode (on) or catalog mode, adding
// or removing its two tools. The catalog tools must not be on the go-sdk's
// server when it goes into search mode: resyncAll removes them first.
// An index is kept for a mirror in search mode, and for the aggregate
// once it has been searched (Gateway.Search) or put in search mode.
func (m *mirror) setSearch(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.search == on {
		return
	}
	m.search = on
	m.hints.Store(m.listHints())
	if on {
		if m.index == nil {
			m.index = toolsearch.New()
		}
		m.server.AddTool(searchTool, m.searchTools)
		m.server.AddTool(callTool, m.callTool)
		m.changed(toolListChanged)
		return
	}
	m.server.RemoveTools(SearchToolName, CallToolName)
	m.changed(toolListChanged)
	if m != m.g.agg {
		m.index = nil
	}
}

// buildIndex makes the aggregate's index on its first search in catalog
// mode (Gateway.Search), of what it shows; from then on sync keeps it in
// step. A daemon whose tools nobody searches holds no index: the index
// takes 365 bytes a tool (bench.BenchmarkToolSearch) beside the records it
// points to, several KiB a server of the daemon-scale benchmark's idle
// fleets. m.mu is held.
func (m *mirror) buildIndex() {
	m.index = toolsearch.New()
	for server, ex := range m.shown {
		m.reindex(server, nil, ex.tools)
	}
}

// reindex gives the index what server shows now, if it changed (m.mu is
// held).
func (m *mirror) reindex(server string, old, next map[string]*mcp.Tool) {
	if m.index == nil {
		return
	}
	if len(old) == len(next) {
		same := true
		for name, t := range next {
			if old[name] != t {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	docs := make([]toolsearch.Tool, 0, len(next))
	for _, name := range slices.Sorted(maps.Keys(next)) {
		t := next[name]
		cp := *t
		if sel, ok := m.selector(sb.KindTool, server, t.Name); ok {
			override(&cp, sel)
		}
		docs = append(docs, searchDoc(name, &cp))
	}
	m.index.Set(server, docs)
}

// searchDoc is what the index knows of a tool shown as exposed.
func searchDoc(exposed string, t *mcp.Tool) toolsearch.Tool {
	d := toolsearch.Tool{Name: t.Name, Exposed: exposed, Title: t.Title, Description: t.Description, Params: schemaParams(t.InputSchema)}
	if a := t.Annotations; a != nil {
		if d.Title == "" {
			d.Title = a.Title
		}
		if a.ReadOnlyHint {
			d.Annotations = append(d.Annotations, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			d.Annotations = append(d.Annotations, "destructive")
		}
		if a.IdempotentHint {
			d.Annotations = append(d.Annotations, "idempotent")
		}
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			d.Annotations = append(d.Annotations, "open-world")
		}
	}
	return d
}

// schemaParams reads the arguments' names and descriptions of an input
// schema (its top-level properties); none of a schema it cannot read.
func schemaParams(schema any) []toolsearch.Param {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	var raw []byte
	switch v := schema.(type) {
	case json.RawMessage:
		raw = v
	case nil:
		return nil
	default:
		raw, _ = json.Marshal(v)
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	ps := make([]toolsearch.Param, 0, len(s.Properties))
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		ps = append(ps, toolsearch.Param{Name: name, Description: s.Properties[name].Description})
	}
	return ps
}

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// FoundTool is one tool search_tools returns: as tools/list would list it.
type FoundTool struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema any                  `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// searchTools serves search_tools.
func (m *mirror) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args searchArgs
	if err := unmarshalArgs(req.Params.Arguments, &args); err != nil {
		return toolError("search_tools: " + err.Error()), nil
	}
	if strings.TrimSpace(args.Query) == "" {
		return toolError(`search_tools: "query" is required: say in plain words what the tool should do`), nil
	}
	limit := args.Limit
	switch {
	case limit <= 0:
		limit = DefaultSearchLimit
	case limit > MaxSearchLimit:
		limit = MaxSearchLimit
	}
	found := []FoundTool{}
	for _, h := range m.find(args.Query, limit) {
		m.mu.Lock()
		t := m.shown[h.Tool.Server].tools[h.Tool.Exposed]
		m.mu.Unlock()
		if t == nil {
			continue // gone since the search
		}
		cp := *t
		if sel, ok := m.selector(sb.KindTool, h.Tool.Server, t.Name); ok {
			override(&cp, sel)
		}
		schema := cp.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		found = append(found, FoundTool{Name: h.Tool.Exposed, Title: cp.Title, Description: cp.Description, InputSchema: schema, Annotations: cp.Annotations})
	}
	body, err := json.Marshal(map[string]any{"tools": found})
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: json.RawMessage(body)}, nil
}

// find runs a search over what the mirror shows, asking the toolset (as
// it is now) before a tool is scored.
func (m *mirror) find(query string, limit int) []toolsearch.Hit {
	m.mu.Lock()
	if m.index == nil && m == m.g.agg {
		m.buildIndex()
	}
	ix := m.index
	m.mu.Unlock()
	if ix == nil {
		return nil
	}
	var allow func(*toolsearch.Tool) bool
	if m.set != "" {
		ts, _, ok := m.g.toolset(m.set)
		if !ok {
			return nil
		}
		allow = func(t *toolsearch.Tool) bool { return ts.Allows(sb.KindTool, t.Server, t.Name) }
	}
	return ix.Search(query, limit, allow)
}

// callArgs are call_tool's arguments.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callTool serves call_tool: the named tool, if the endpoint shows it,
// called as a tools/call of it would be. A tool the endpoint does not
// show, hidden or not there at all, is answered alike.
func (m *mirror) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args callArgs
	if err := unmarshalArgs(req.Params.Arguments, &args); err != nil {
		return toolError("call_tool: " + err.Error()), nil
	}
	if args.Name == "" {
		return toolError(`call_tool: "name" is required: a name search_tools returned`), nil
	}
	if a := strings.TrimSpace(string(args.Arguments)); a != "" && a != "null" && a[0] != '{' {
		return toolError(`call_tool: "arguments" must be an object`), nil
	}
	o, ok := m.found(args.Name)
	if !ok || !m.allows(sb.KindTool, o.server, o.name) {
		return toolError(fmt.Sprintf("call_tool: unknown tool %q (search_tools finds the tools there are)", args.Name)), nil
	}
	p := *req.Params
	p.Name, p.Arguments = args.Name, args.Arguments
	if string(p.Arguments) == "null" {
		p.Arguments = nil
	}
	inner := *req
	inner.Params = &p
	return m.g.call(ctx, m.server, &inner, o.server, o.name)
}

// found returns what a name of the catalog stands for, if the mirror
// shows it.
func (m *mirror) found(name string) (origin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.tools[name]
	return o, ok && m.shown[o.server] != nil && m.shown[o.server].tools[name] != nil
}

// unmarshalArgs decodes a tool's arguments (none is {}).
func unmarshalArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the arguments: %w", err)
	}
	return nil
}

// toolError is a result the model can read, marked as an error.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// searchNeedsLists is needsLists for a mirror in search mode: a search
// waits for the servers (so that it finds what they bring), a call_tool
// only if it names a tool the mirror does not show yet.
func (m *mirror) searchNeedsLists(r *mcp.CallToolRequest) bool {
	switch r.Params.Name {
	case SearchToolName:
		return true
	case CallToolName:
		var args callArgs
		return unmarshalArgs(r.Params.Arguments, &args) == nil && args.Name != "" && !m.has(m.tools, args.Name)
	}
	return false
}

// Search finds, among the tools of every connected server, at most limit
// that match query, best first: what GET /api/v1/tools?search= answers.
// Names are the servers' own. The aggregate is brought in step with the
// servers first (WaitInStep: a server's first attempt is waited for, as
// a client's first tools/list waits for it, and a change the window still
// gathers is taken in), so a server that has just connected is searched
// at once: the API's other answers read the servers themselves. It fails
// if ctx ends first, or the gateway is closed.
func (g *Gateway) Search(ctx context.Context, query string, limit int) ([]api.ToolHit, error) {
	if err := g.WaitInStep(ctx); err != nil {
		return nil, err
	}
	out := []api.ToolHit{}
	for _, h := range g.agg.find(query, limit) {
		out = append(out, api.ToolHit{Server: h.Tool.Server, Name: h.Tool.Name, Description: h.Tool.Description, Score: h.Score})
	}
	return out, nil
}

// searching reports whether the mirror is in search mode.
func (m *mirror) searching() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.search
}
