package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// listPeer is a server written as JSON-RPC lines, for what a go-sdk
// server would refuse to list: null tools, invalid x-mcp-header
// annotations, keys in the wrong case, lists in pages. It answers each
// request from pages (method → results, one per page; the request's
// cursor is the index of the page asked for) and records the ids it was
// sent.
type listPeer struct {
	pages map[string][]string
	// later replaces pages once the test sets switched (after discovery).
	later    map[string][]string
	switched bool

	mu  sync.Mutex
	ids map[string][]string // by method
}

func (p *listPeer) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // a notification
		}
		p.mu.Lock()
		p.ids[req.Method] = append(p.ids[req.Method], string(req.ID))
		pages := p.pages[req.Method]
		if p.switched {
			pages = p.later[req.Method]
		}
		p.mu.Unlock()
		result := `{}`
		switch {
		case req.Method == "initialize":
			result = `{"protocolVersion":"2025-11-25","serverInfo":{"name":"lists","version":"1"},` +
				`"capabilities":{"tools":{},"resources":{},"prompts":{},"logging":{}}}`
		case len(pages) > 0:
			i := 0
			if req.Params.Cursor != "" {
				i = int(req.Params.Cursor[0] - '0')
			}
			result = pages[i]
		}
		reply := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + "}\n"
		if strings.HasPrefix(result, `{"error"`) {
			reply = `{"jsonrpc":"2.0","id":` + string(req.ID) + `,` + result[1:len(result)-1] + "}\n"
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

// listPeerSession connects a session to a listPeer and returns its link.
func listPeerSession(t *testing.T, p *listPeer, logs io.Writer) *link {
	t.Helper()
	p.ids = map[string][]string{}
	s := New(&sb.ServerConfig{Name: "lists", Transport: sb.TransportStdio, Command: "in-process"}, &Options{
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		HealthInterval: -1,
		Dial: func(context.Context) (io.ReadWriteCloser, error) {
			client, server := net.Pipe()
			go p.serve(server)
			return client, nil
		},
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.link
}

// both collects a list through the go-sdk and through the frame
// connection, on the same link.
func both[T any](t *testing.T, sdk, raw iter.Seq2[T, error]) (fromSDK, fromRaw []T, sdkErr, rawErr error) {
	t.Helper()
	fromSDK, _, sdkErr = collect(sdk)
	fromRaw, _, rawErr = collect(raw)
	return
}

func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("%s differ:\n go-sdk: %s\n    raw: %s", what, ja, jb)
	}
}

// TestRawListsAreTheGoSDKs: on a byte stream, lists are read from the
// bytes (rawlist.go), and they come out as the go-sdk's ListTools and
// kin make them: every page, the same objects, the same tools left out.
func TestRawListsAreTheGoSDKs(t *testing.T) {
	p := &listPeer{pages: map[string][]string{
		"tools/list": {
			`{"tools":[{"name":"plain","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}},` +
				`null,` +
				`{"name":"header-ok","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},` +
				`"nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"Nested-N"}}}}}},` +
				`{"name":"header-on-object","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}}],` +
				`"nextCursor":"1"}`,
			`{"tools":[{"name":"header-twice","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Same"},` +
				`"b":{"type":"string","x-mcp-header":"same"}}}},` +
				`{"name":"header-bad-char","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"a b"}}}},` +
				`{"name":"header-empty","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}},` +
				`{"name":"header-not-string","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}},` +
				`{"name":"odd-schema","inputSchema":{"type":"object","properties":{"a":{"type":5,"x-mcp-header":"A"}}}},` +
				`{"name":"wrong-case","InputSchema":{"type":"object"},"Description":"not read","outputSchema":{"type":"object"},` +
				`"annotations":{"readOnlyHint":true},"_meta":{"k":1}}]}`,
		},
		"resources/list": {
			`{"resources":[{"uri":"test://a","name":"a","mimeType":"text/plain"}],"nextCursor":"1"}`,
			`{"resources":[{"uri":"test://b","name":"b","size":3,"URI":"ignored"}]}`,
		},
		"resources/templates/list": {`{"resourceTemplates":[{"uriTemplate":"test://{x}","name":"x"}]}`},
		"prompts/list":             {`{"prompts":[{"name":"p","arguments":[{"name":"a","required":true}]}]}`},
	}}
	var logs bytes.Buffer
	l := listPeerSession(t, p, &logs)
	ctx := context.Background()

	sdkTools, rawTools, sdkErr, rawErr := both(t, l.cs.Tools(ctx, nil), l.toolPages(ctx, nil))
	if sdkErr != nil || rawErr != nil {
		t.Fatalf("tools: %v, %v", sdkErr, rawErr)
	}
	sameJSON(t, "tools", sdkTools, rawTools)
	var names []string
	for _, tool := range rawTools {
		names = append(names, tool.Name)
	}
	if got, want := strings.Join(names, " "), "plain header-ok odd-schema wrong-case"; got != want {
		t.Errorf("tools %q, want %q", got, want)
	}
	for _, left := range []string{"null tool", "header-on-object", "header-twice", "header-bad-char", "header-empty", "header-not-string"} {
		if !strings.Contains(logs.String(), left) {
			t.Errorf("nothing logged of %s:\n%s", left, logs.String())
		}
	}

	sdkRes, rawRes, sdkErr, rawErr := both(t, l.cs.Resources(ctx, nil), l.resourcePages(ctx, nil))
	if sdkErr != nil || rawErr != nil || len(rawRes) != 2 {
		t.Fatalf("resources: %d, %v, %v", len(rawRes), sdkErr, rawErr)
	}
	sameJSON(t, "resources", sdkRes, rawRes)
	sdkTpl, rawTpl, sdkErr, rawErr := both(t, l.cs.ResourceTemplates(ctx, nil), l.templatePages(ctx, nil))
	if sdkErr != nil || rawErr != nil || len(rawTpl) != 1 {
		t.Fatalf("templates: %d, %v, %v", len(rawTpl), sdkErr, rawErr)
	}
	sameJSON(t, "templates", sdkTpl, rawTpl)
	sdkPr, rawPr, sdkErr, rawErr := both(t, l.cs.Prompts(ctx, nil), l.promptPages(ctx, nil))
	if sdkErr != nil || rawErr != nil || len(rawPr) != 1 {
		t.Fatalf("prompts: %d, %v, %v", len(rawPr), sdkErr, rawErr)
	}
	sameJSON(t, "prompts", sdkPr, rawPr)

	// Discovery went over the frame connection, ids and all.
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list", "logging/setLevel"} {
		if ids := p.ids[m]; len(ids) == 0 || !strings.HasPrefix(ids[0], `"sb-`) {
			t.Errorf("%s was sent with ids %v, want the frame connection's first", m, ids)
		}
	}
}

// TestRawListErrorsAreTheGoSDKs: a server's error answer and a result that
// is not a list fail the same way on both paths.
func TestRawListErrorsAreTheGoSDKs(t *testing.T) {
	p := &listPeer{later: map[string][]string{
		"tools/list":     {`{"error":{"code":-32603,"message":"no tools today"}}`},
		"resources/list": {`{"resources":{"uri":"not a list"}}`},
	}}
	l := listPeerSession(t, p, io.Discard)
	p.mu.Lock()
	p.switched = true
	p.mu.Unlock()
	ctx := context.Background()
	_, _, sdkErr, rawErr := both(t, l.cs.Tools(ctx, nil), l.toolPages(ctx, nil))
	if sdkErr == nil || rawErr == nil || sdkErr.Error() != rawErr.Error() {
		t.Errorf("tools/list errors: go-sdk %v, raw %v; want the same", sdkErr, rawErr)
	}
	_, _, sdkErr, rawErr = both(t, l.cs.Resources(ctx, nil), l.resourcePages(ctx, nil))
	if sdkErr == nil || rawErr == nil || sdkErr.Error() != rawErr.Error() {
		t.Errorf("resources/list errors: go-sdk %v, raw %v; want the same", sdkErr, rawErr)
	}
}

// TestListsKeepTheirCacheHints: the session keeps the cache hints of each
// list it read (SEP-2549), its pages folded into one: the shortest ttlMs,
// private if any page said so; a list that said none has none.
func TestListsKeepTheirCacheHints(t *testing.T) {
	p := &listPeer{pages: map[string][]string{
		"tools/list": {
			`{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"1","ttlMs":5000,"cacheScope":"public"}`,
			`{"tools":[{"name":"b","inputSchema":{"type":"object"}}],"ttlMs":9000,"cacheScope":"private"}`,
		},
		"resources/list":           {`{"resources":[{"uri":"test://a","name":"a"}]}`},
		"resources/templates/list": {`{"resourceTemplates":[],"ttlMs":0,"cacheScope":"public"}`},
		"prompts/list": {
			`{"prompts":[{"name":"p"}],"nextCursor":"1","ttlMs":3000,"cacheScope":"public"}`,
			`{"prompts":[{"name":"q"}],"ttlMs":7000,"cacheScope":"public"}`,
		},
	}}
	l := listPeerSession(t, p, io.Discard)
	got := l.session.CacheHints()
	want := ListHints{
		Tools:     mcp.Cacheable{TTLMs: 5000, CacheScope: "private"},
		Templates: mcp.Cacheable{TTLMs: 0, CacheScope: "public"},
		Prompts:   mcp.Cacheable{TTLMs: 3000, CacheScope: "public"},
	}
	if got != want {
		t.Errorf("hints %+v, want %+v", got, want)
	}
}
