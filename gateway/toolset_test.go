package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
	"github.com/switchboard-mcp/switchboard/upstream"
)

const adminToken = "admin-secret"

// toolsetEnv is newEnv with toolsets and API tokens, wired as serve wires
// them, behind the admin token adminToken.
type toolsetEnv struct {
	*env
	toolsets *registry.Toolsets
	tokens   *registry.Tokens
}

func newToolsetEnv(t *testing.T, servers ...*sb.ServerConfig) *toolsetEnv {
	t.Helper()
	return newToolsetEnvOn(t, sqlitetest.Store(t, servers...), upstream.Options{}, gateway.Options{})
}

// newToolsetEnvOn is newToolsetEnv on the store st (another env's: a
// replica of it), with so the template of the sessions' options (a
// sandbox runtime) and the gateway options opts.
func newToolsetEnvOn(t *testing.T, st *sqlite.Store, so upstream.Options, opts gateway.Options) *toolsetEnv {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts, err := registry.NewToolsets(st, log)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := registry.NewTokens(st, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tk.Load(ctx); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, &registry.Options{Logger: log, Followers: []registry.Follower{ts, tk}, Session: so})
	ex := executor.New(executor.NewMCP(reg))
	opts.Executor, opts.Logger, opts.ResyncInterval, opts.Toolsets = ex, log, time.Second, ts
	gw := gateway.New(reg, opts)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Token: adminToken, Logger: log,
		MCP: gw.Handler(), ToolsetMCP: gw.ToolsetHandler(), Toolsets: ts, Tokens: tk}))
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		reg.Shutdown(ctx)
		tk.Close()
	})
	return &toolsetEnv{env: &env{t: t, reg: reg, gw: gw, url: srv.URL}, toolsets: ts, tokens: tk}
}

// bearer adds a token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs opens a client session to path with token; version "" lets
// the go-sdk client choose (the stateless 2026-07-28).
func (e *toolsetEnv) connectAs(path, token, version string) (*mcp.ClientSession, error) {
	return e.connectWith(&mcp.StreamableClientTransport{Endpoint: e.url + path,
		HTTPClient: &http.Client{Transport: bearer(token)}}, version)
}

func (e *toolsetEnv) connectWith(tr *mcp.StreamableClientTransport, version string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), tr, opts)
	if err == nil {
		e.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// coder selects two tools of two servers (one renamed, described and
// marked read-only), one prompt and one resource template.
var coder = sb.Toolset{Name: "coder",
	Tools: []sb.Selector{
		{Server: "alpha", Tool: "echo", As: "say", Description: "Says it back.",
			Annotations: &sb.ToolAnnotations{ReadOnlyHint: ptr(true)}},
		{Server: "beta", Tool: "add"},
	},
	Prompts:   []sb.Selector{{Server: "alpha", Tool: "greet"}},
	Resources: []sb.ResourceSelector{{Server: "alpha", URI: "test://items/*"}},
}

func ptr[T any](v T) *T { return &v }

func (e *toolsetEnv) createToken(name string, scopes ...sb.Scope) string {
	e.t.Helper()
	secret, _, err := e.tokens.Create(context.Background(), name, scopes)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// A toolset's client lists exactly what it selects, under the exposed
// names and overrides, and cannot call, get, read or complete anything
// else, whatever name it tries, on either protocol generation.
func TestToolsetShowsAndAllowsOnlyItsSelection(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	if _, err := e.toolsets.Create(context.Background(), &coder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("coder-bot", sb.ToolsetScope("coder"))
	for _, version := range []string{"2025-11-25", ""} {
		name := version
		if name == "" {
			name = "2026-07-28 stateless"
		}
		t.Run(name, func(t *testing.T) {
			cs, err := e.connectAs("/toolsets/coder/mcp", tok, version)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; version == "" && got != "2026-07-28" {
				t.Fatalf("negotiated %q, want the stateless 2026-07-28", got)
			}
			checkCoder(t, cs)
		})
	}
}

func checkCoder(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	names := waitTools(t, cs, "say", "beta__add")
	slices.Sort(names)
	if !slices.Equal(names, []string{"beta__add", "say"}) {
		t.Fatalf("tools %v, want exactly [beta__add say]", names)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "say" && (tool.Description != "Says it back." || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint) {
			t.Errorf("say shows as %+v (annotations %+v), want the overrides", tool, tool.Annotations)
		}
	}
	if got := text(t)(cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "hi"}})); got != "hi" {
		t.Errorf("say = %q", got)
	}
	if got := text(t)(cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{"a": 2, "b": 3}})); got != "5" {
		t.Errorf("beta__add = %q", got)
	}
	for _, hidden := range []string{"echo", "alpha__echo", "beta__echo", "alpha__add", "add", "pid", "alpha__pid"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: hidden, Arguments: map[string]any{"text": "x"}})
		if err == nil {
			t.Errorf("calling the hidden %s succeeded: %+v", hidden, res)
		} else if !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("calling the hidden %s: %v, want unknown tool", hidden, err)
		}
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "alpha__greet" {
		t.Errorf("prompts %+v, %v; want only alpha__greet", prompts, err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"name": "x"}}); err != nil {
		t.Errorf("get alpha__greet: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__greet", Arguments: map[string]string{"name": "x"}}); err == nil {
		t.Error("got the hidden prompt beta__greet")
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "beta__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"}}); err == nil {
		t.Error("completed an argument of the hidden prompt beta__greet")
	}

	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) != 0 {
		t.Errorf("resources %+v, %v; want none (test://hello is not selected)", resources, err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://items/{id}" {
		t.Errorf("templates %+v, %v; want only alpha's test://items/{id}", templates, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/42"}); err != nil {
		t.Errorf("read test://items/42: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"}); err == nil {
		t.Error("read the hidden test://hello")
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://hello"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}}); err == nil {
		t.Error("completed the hidden test://hello")
	}
}

// A toolset token reaches its toolset's endpoint and nothing else: not
// another toolset, not /mcp or /mcp/{name}, not the API.
func TestToolsetTokenReachesOnlyItsToolset(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	ctx := context.Background()
	if _, err := e.toolsets.Create(ctx, &coder); err != nil {
		t.Fatal(err)
	}
	if _, err := e.toolsets.Create(ctx, &sb.Toolset{Name: "support", Tools: []sb.Selector{{Server: "beta", Tool: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("coder-bot", sb.ToolsetScope("coder"))
	for _, path := range []string{"/toolsets/support/mcp", "/mcp", "/mcp/alpha", "/mcp/beta", "/api/v1/servers", "/api/v1/tokens", "/toolsets/coder/mcp/../../support/mcp"} {
		for _, version := range []string{"2025-11-25", ""} {
			if _, err := e.connectAs(path, tok, version); err == nil {
				t.Errorf("%s (version %q): connected with a token of toolset coder", path, version)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 403", path, resp.StatusCode)
		}
	}
	// The same on a stateless 2026-07-28 call of a hidden tool through
	// the per-server endpoint.
	if code := rawCall(t, e.url+"/mcp/alpha", tok, "echo"); code != http.StatusForbidden {
		t.Errorf("a stateless call on /mcp/alpha with the coder token: %d, want 403", code)
	}
	if code := rawCall(t, e.url+"/toolsets/support/mcp", tok, "beta__echo"); code != http.StatusForbidden {
		t.Errorf("a stateless call on toolset support with the coder token: %d, want 403", code)
	}
	// And the mcp scope reaches /mcp but no toolset.
	all := e.createToken("all", sb.ScopeMCP)
	if _, err := e.connectAs("/mcp", all, "2025-11-25"); err != nil {
		t.Errorf("an mcp token on /mcp: %v", err)
	}
	if _, err := e.connectAs("/toolsets/coder/mcp", all, "2025-11-25"); err == nil {
		t.Error("an mcp token reached a toolset")
	}
}

// rawCall sends one stateless 2026-07-28 tools/call and returns the HTTP
// status.
func rawCall(t *testing.T, url, token, tool string) int {
	t.Helper()
	return postCall(t, url, token, "", "2026-07-28", `{"name":"`+tool+`","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
}

// postCall POSTs one tools/call with params, on session if not empty, and
// returns the HTTP status.
func postCall(t *testing.T, url, token, session, version, params string) int {
	t.Helper()
	return postMessage(t, url, token, session, version, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
}

// postMessage POSTs the JSON-RPC message body as a Streamable HTTP client
// does, with token and on session where they are not empty, and returns
// the HTTP status.
func postMessage(t *testing.T, url, token, session, version, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Revoking a token takes effect on a session that is open: its next
// request is refused, and its open SSE stream is closed.
func TestRevokedTokenStopsAnOpenSession(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	ctx := context.Background()
	if _, err := e.toolsets.Create(ctx, &coder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("coder-bot", sb.ToolsetScope("coder"))
	// The test opens the session's standalone stream itself, to see it end.
	cs, err := e.connectWith(&mcp.StreamableClientTransport{Endpoint: e.url + "/toolsets/coder/mcp",
		HTTPClient: &http.Client{Transport: bearer(tok)}, DisableStandaloneSSE: true}, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "say")
	stream := openStream(t, e.url+"/toolsets/coder/mcp", tok, cs.ID())

	req, _ := http.NewRequest(http.MethodDelete, e.url+"/api/v1/tokens/coder-bot", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	select {
	case <-stream:
	case <-time.After(10 * time.Second):
		t.Fatal("the open SSE stream of the revoked token was not closed")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "hi"}}); err == nil {
		t.Fatal("a call of the open session succeeded after its token was revoked")
	}
	if code := rawCall(t, e.url+"/toolsets/coder/mcp", tok, "say"); code != http.StatusUnauthorized {
		t.Errorf("a stateless call with the revoked token: %d, want 401", code)
	}
}

// openStream opens the session's standalone SSE stream (GET) and returns
// a channel closed when the server ends it.
func openStream(t *testing.T, url, token, session string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
	}()
	return done
}

// The toolset API refuses a toolset whose exposed names would collide,
// and guards edits with versions.
func TestToolsetAPI(t *testing.T) {
	e := newToolsetEnv(t)
	do := func(method, path string, body any) (int, api.ErrorBody) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = strings.NewReader(string(b))
		}
		req, _ := http.NewRequest(method, e.url+path, r)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var eb api.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb
	}
	clash := sb.Toolset{Name: "x", Tools: []sb.Selector{{Server: "a", Tool: "one", As: "same"}, {Server: "b", Tool: "two", As: "same"}}}
	if code, eb := do("POST", "/api/v1/toolsets", clash); code != http.StatusBadRequest || eb.Error.Code != sb.CodeInvalidConfig ||
		len(eb.Error.Fields) != 1 || eb.Error.Fields[0].Field != "tools[1].as" {
		t.Errorf("a collision: %d %+v", code, eb)
	}
	if code, _ := do("POST", "/api/v1/toolsets", coder); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if code, eb := do("POST", "/api/v1/toolsets", coder); code != http.StatusConflict || eb.Error.Code != sb.CodeExists {
		t.Errorf("create again: %d %+v", code, eb)
	}
	if code, _ := do("PUT", "/api/v1/toolsets/coder?version=1", coder); code != http.StatusOK {
		t.Errorf("update at version 1: %d", code)
	}
	if code, eb := do("PUT", "/api/v1/toolsets/coder?version=1", coder); code != http.StatusConflict || eb.Error.Code != sb.CodeConflict {
		t.Errorf("update at an old version: %d %+v", code, eb)
	}
	if code, _ := do("DELETE", "/api/v1/toolsets/coder", nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, eb := do("GET", "/api/v1/toolsets/coder", nil); code != http.StatusNotFound || eb.Error.Code != sb.CodeNotFound {
		t.Errorf("get deleted: %d %+v", code, eb)
	}
}

// A toolset follows its servers: a server that goes down leaves the
// toolset's list and comes back, with list_changed each time; an edit of
// the toolset reaches its open sessions the same way.
func TestToolsetFollowsItsServersAndEdits(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"), stdio(t, "beta"))
	ctx := context.Background()
	if _, err := e.toolsets.Create(ctx, &coder); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("coder-bot", sb.ToolsetScope("coder"))
	changed := make(chan struct{}, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream"}, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/toolsets/coder/mcp",
		HTTPClient: &http.Client{Transport: bearer(tok)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "say", "beta__add")
	drain := func() {
		for len(changed) > 0 {
			<-changed
		}
	}
	awaitChange := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no tools/list_changed when %s", what)
		}
	}
	drain()
	if _, err := e.reg.SetEnabled(ctx, "beta", false); err != nil {
		t.Fatal(err)
	}
	awaitChange("a server left")
	if names := waitTools(t, cs, "say"); slices.Contains(names, "beta__add") {
		t.Fatalf("the disabled server's tool is still listed: %v", names)
	}
	drain()
	if _, err := e.reg.SetEnabled(ctx, "beta", true); err != nil {
		t.Fatal(err)
	}
	awaitChange("the server came back")
	waitTools(t, cs, "say", "beta__add")

	drain()
	narrower := coder
	narrower.Tools = coder.Tools[:1]
	if _, err := e.toolsets.Update(ctx, "coder", &narrower, 0); err != nil {
		t.Fatal(err)
	}
	awaitChange("the toolset was narrowed")
	for range 200 {
		names := waitTools(t, cs, "say")
		if !slices.Contains(names, "beta__add") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{"a": 1, "b": 2}}); err == nil {
		t.Error("a tool the toolset no longer selects could still be called")
	}
}

// A session belongs to the token that began it, on the relay's path as on
// the go-sdk's: another token, even one with the same scope, that presents
// its session id is refused, and the session's own token is still relayed.
func TestSessionIsBoundToItsTokenOnTheRelay(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha"))
	owner, other := e.createToken("owner", sb.ScopeMCP), e.createToken("other", sb.ScopeMCP)
	cs, err := e.connectAs("/mcp/alpha", owner, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "echo")
	call := func(token string) int {
		return postCall(t, e.url+"/mcp/alpha", token, cs.ID(), "2025-11-25", `{"name":"echo","arguments":{"text":"mine"}}`)
	}
	// The endpoint checks the session's token on every request.
	served := gateway.RelayServed(e.gw)
	if code := call(owner); code != http.StatusOK {
		t.Errorf("the owner's call: %d, want 200", code)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d of the owner's calls, want 1", got)
	}
	if code := call(other); code != http.StatusForbidden {
		t.Errorf("another token's call on the session: %d, want 403", code)
	}
	if got := gateway.RelayServed(e.gw) - served; got != 1 {
		t.Errorf("the relay served %d calls, want only the owner's", got)
	}
}

// A toolset's resource pattern is matched against normal URIs only:
// file:///repo/docs/* used to let file:///repo/docs/../secret and its
// %2e%2e spelling through to the server, which resolved them outside the
// pattern. Now they are not found, and a URI under the pattern still reads.
func TestToolsetResourcePatternRefusesDotSegments(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "fs", "-name", "fs", "-resource-template", "file:///repo/docs/{+path}"))
	docs := sb.Toolset{Name: "docs", Resources: []sb.ResourceSelector{{Server: "fs", URI: "file:///repo/docs/*"}}}
	if _, err := e.toolsets.Create(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	cs, err := e.connectAs("/toolsets/docs/mcp", adminToken, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///repo/docs/a.md"})
		if err == nil {
			if got := rr.Contents[0].Text; got != "fs: file:///repo/docs/a.md" {
				t.Fatalf("read file:///repo/docs/a.md: %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read file:///repo/docs/a.md: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, uri := range []string{"file:///repo/docs/../secret", "file:///repo/docs/%2e%2e/secret", "file:///repo/docs/%2E%2e/secret",
		"file:///repo/docs/./../secret", "file:///repo/docs/x%2f..%2f..%2fsecret"} {
		if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s through file:///repo/docs/*: %q", uri, rr.Contents[0].Text)
		}
	}
}

// A toolset's endpoint offers what the toolset shows, on either
// generation alike (initialize of 2025-11-25, server/discover of
// 2026-07-28): the kinds it selects, with its servers' subscribe and
// logging (the testserver serves no completion, so none is offered), and
// its own serverInfo. Its lists carry the hints of the servers whose items
// they show: tools of alpha (private, 60 s) and beta (public, 0 s) are
// private, 0 s; prompts and templates only alpha's; resources none.
func TestToolsetOffersWhatItShows(t *testing.T) {
	e := newToolsetEnv(t, stdio(t, "alpha", "-private-cache"), stdio(t, "beta"))
	ctx := context.Background()
	if _, err := e.toolsets.Create(ctx, &coder); err != nil {
		t.Fatal(err)
	}
	toolsOnly := sb.Toolset{Name: "tools-only", Tools: []sb.Selector{{Server: "alpha", Tool: "echo"}}}
	if _, err := e.toolsets.Create(ctx, &toolsOnly); err != nil {
		t.Fatal(err)
	}
	tok := e.createToken("bot", sb.ToolsetScope("coder"), sb.ToolsetScope("tools-only"))
	first, err := e.connectAs("/toolsets/coder/mcp", tok, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, first, "say", "beta__add") // both servers connected

	want := map[string]*mcp.ServerCapabilities{
		"coder": {
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:   &mcp.LoggingCapabilities{},
		},
		"tools-only": {
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Logging: &mcp.LoggingCapabilities{},
		},
	}
	for set, w := range want {
		for _, version := range []string{"2025-11-25", ""} {
			cs, err := e.connectAs("/toolsets/"+set+"/mcp", tok, version)
			if err != nil {
				t.Fatal(err)
			}
			ir := cs.InitializeResult()
			got, _ := json.Marshal(ir.Capabilities)
			wantJSON, _ := json.Marshal(w)
			if string(got) != string(wantJSON) || ir.ServerInfo == nil || ir.ServerInfo.Name != "switchboard/toolsets/"+set {
				t.Errorf("%s, version %q (%s): capabilities %s, serverInfo %+v; want %s, switchboard/toolsets/%s",
					set, version, ir.ProtocolVersion, got, ir.ServerInfo, wantJSON, set)
			}
		}
	}

	for method, w := range map[string]mcp.Cacheable{
		"tools/list":               {TTLMs: 0, CacheScope: "private"},
		"prompts/list":             {TTLMs: 60000, CacheScope: "private"},
		"resources/templates/list": {TTLMs: 60000, CacheScope: "private"},
		"resources/list":           {TTLMs: 0, CacheScope: "public"},
	} {
		req := newRequest(t, e.url+"/toolsets/coder/mcp", method, "", `{}`, plainCaps)
		req.Header.Set("Authorization", "Bearer "+tok)
		a := send(t, req)
		var got mcp.Cacheable
		if err := json.Unmarshal([]byte(a.result), &got); err != nil || a.status != http.StatusOK || got != w {
			t.Errorf("%s: HTTP %d, result %.300s, error %s; want ttlMs %d, cacheScope %s", method, a.status, a.result, a.err, w.TTLMs, w.CacheScope)
		}
	}
}
