package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer sends a token on every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// pick is the CSS selector of a tool's row in the toolset form.
func pick(address string) string { return fmt.Sprintf(`#ts-tools li[data-pick=%q]`, address) }

// TestToolsetAndTokenMadeOnThePageServeAClient: a toolset made on the page
// by picking two tools (one renamed, with a description of its own) and a
// token of its scope made there too give a go-sdk client on the toolset's
// endpoint exactly those tools; the token revoked on the page is refused.
func TestToolsetAndTokenMadeOnThePageServeAClient(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.click(`#nav button[data-view="toolsets"]`)
	p.waitJS("the toolsets view", `document.getElementById("toolsets-empty").hidden === false`)
	p.click("#toolset-new")
	p.waitJS("the tools to pick", `document.querySelector('`+pick("work/add")+`') !== null`)
	p.fill("#ts-name", "coder")
	p.fill("#ts-desc", "the coder's tools")
	p.fill("#ts-filter", "add")
	p.click(pick("work/add") + ` input[data-role="pick"]`)
	p.fill(pick("work/add")+` input[data-role="as"]`, "plus")
	p.fill(pick("work/add")+` input[data-role="description"]`, "Adds a and b, for the coder.")
	p.fill("#ts-filter", "echo")
	p.click(pick("work/echo") + ` input[data-role="pick"]`)
	p.shot("toolset-form")

	// A name taken twice is refused beside the second row, which keeps the
	// form as it was.
	p.fill(pick("work/echo")+` input[data-role="as"]`, "plus")
	p.click("#ts-save")
	p.waitJS("the field error", `!document.querySelector('`+pick("work/echo")+` [data-role="pick-error"]').hidden`)
	if msg := p.text(pick("work/echo") + ` [data-role="pick-error"]`); !strings.Contains(msg, "tools[1].as") || !strings.Contains(msg, "unique") {
		t.Errorf("the error beside work/echo reads %q", msg)
	}
	var invalid bool
	p.eval(`document.querySelector('`+pick("work/echo")+` input[data-role="as"]').getAttribute("aria-invalid") === "true"`, &invalid)
	if !invalid || !p.textHidden(pick("work/add")+` [data-role="pick-error"]`) {
		t.Errorf("the second row is marked invalid %v; the first has an error: %q", invalid, p.text(pick("work/add")+` [data-role="pick-error"]`))
	}
	p.do(`document.querySelector('` + pick("work/echo") + ` input[data-role="as"]').value = ""`)
	p.click("#ts-save")
	p.waitJS("the new toolset", `document.querySelector('li[data-toolset="coder"]') !== null && document.getElementById("toolset-form").hidden`)
	if got := p.text(`li[data-toolset="coder"] [data-role="toolset-tools"]`); got != "2 tools: work/add as plus, work/echo" {
		t.Errorf("the toolset's card lists %q", got)
	}
	if got := p.text(`li[data-toolset="coder"] [data-role="endpoint"]`); got != p.d.URL+"/toolsets/coder/mcp" {
		t.Errorf("the toolset's endpoint reads %q", got)
	}

	p.fill("#tk-name", "coder-bot")
	p.click(`#tk-scopes input[data-scope="toolset:coder"]`)
	p.click("#tk-create")
	p.waitJS("the secret", `!document.getElementById("token-secret").hidden && document.querySelector('#tokens li[data-token="coder-bot"]') !== null`)
	p.shot("token-made")
	secret := p.text(`#token-secret [data-role="secret"]`)
	if !strings.HasPrefix(secret, "sbt_") {
		t.Fatalf("the page shows the secret %q", secret)
	}
	if got := p.text(`#tokens li[data-token="coder-bot"] [data-role="scopes"]`); got != "toolset:coder" {
		t.Errorf("the token's scopes read %q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	endpoint := p.d.URL + "/toolsets/coder/mcp"
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "coder"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer(secret)}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s with the page's token: %v", endpoint, err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	desc := map[string]string{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		desc[tool.Name] = tool.Description
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"plus", "work__echo"}) || desc["plus"] != "Adds a and b, for the coder." {
		t.Errorf("the toolset's client sees %v (plus: %q), want [plus work__echo] with the description given", names, desc["plus"])
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plus", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "5" {
		t.Fatalf("calling plus: %+v, %v", res, err)
	}

	// Edited on the page: the picks are as they were made; one dropped
	// leaves the client's list.
	p.click(`li[data-toolset="coder"] button[data-action="edit"]`)
	var as string
	var picked []string
	p.eval(`document.querySelector('`+pick("work/add")+` input[data-role="as"]').value`, &as)
	p.eval(`[...document.querySelectorAll('#ts-tools li[data-pick]')].filter(li => li.querySelector('input[data-role="pick"]').checked).map(li => li.dataset.pick)`, &picked)
	if as != "plus" || !slices.Equal(picked, []string{"work/add", "work/echo"}) {
		t.Errorf("editing: picked %v, work/add shown as %q", picked, as)
	}
	p.click(pick("work/echo") + ` input[data-role="pick"]`)
	p.click("#ts-save")
	p.waitJS("the edited toolset", `document.querySelector('li[data-toolset="coder"] [data-role="toolset-tools"]').textContent === "1 tool: work/add as plus"`)
	if list, err = cs.ListTools(ctx, nil); err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "plus" {
		t.Errorf("after the edit the client lists %+v, %v; want plus alone", list, err)
	}

	// Revoked on the page (the button asks twice), the token opens nothing.
	revoke := `#tokens li[data-token="coder-bot"] button[data-action="revoke"]`
	p.click(revoke)
	p.click(revoke)
	p.waitJS("the token gone", `document.querySelector('#tokens li[data-token="coder-bot"]') === null`)
	p.shot("token-revoked")
	if status := initialize(t, endpoint, secret); status != http.StatusUnauthorized {
		t.Errorf("initialize with the revoked token: HTTP %d, want 401", status)
	}
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("the revoked token's session still lists tools")
	}
}

// initialize posts an MCP initialize request with the token and returns
// the HTTP status.
func initialize(t *testing.T, endpoint, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
