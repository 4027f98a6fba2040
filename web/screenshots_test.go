package web_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// envScreenshots names the directory TestDocScreenshots writes the
// documentation's screenshots to (scripts/screenshots.sh sets it to docs/).
const envScreenshots = "SWITCHBOARD_SCREENSHOTS"

// TestDocScreenshots regenerates the screenshots of docs/ (README's
// web-servers.png among them) from a real serve with six servers, some
// calls, a failing one and a disabled one: the overview, a detail view, the
// forms, the tool bench, toolsets and tokens, the audit log. It runs only when
// $SWITCHBOARD_SCREENSHOTS names the directory to write them to.
func TestDocScreenshots(t *testing.T) {
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		t.Skip("set " + envScreenshots + " to the directory of the screenshots (scripts/screenshots.sh)")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := newLoggedInPage(t)
	remote := testserver.StartHTTP(t, "-name", "search")
	p.addServer("files", "-name", "files")
	p.addServer("notes", "-name", "notes")
	p.addServer("github", "-name", "github")
	// Setup through the API, bounded as a whole: the test is a script.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := p.api.CreateServer(ctx, &sb.ServerConfig{Name: "search", Transport: sb.TransportStreamableHTTP, URL: remote.URL}); err != nil {
		t.Fatal(err)
	}
	p.addBroken("legacy-db")
	off := false
	if _, err := p.api.CreateServer(ctx, &sb.ServerConfig{Name: "scratch", Transport: sb.TransportStdio, Command: testserver.Binary(t),
		Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	p.waitJS("search listed", card("search")+` !== null`)
	for i := range 12 {
		p.call("files/add", map[string]any{"a": i, "b": 1})
		if i%3 == 0 {
			p.call("notes/slow", map[string]any{"duration_ms": 40 * (i + 1), "interval_ms": 20})
		}
	}
	if _, err := p.api.Call(ctx, "github/fail", map[string]any{"message": "rate limited"}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	// save writes the whole page; saveScreen only what a 1280 x 900
	// window shows (the audit log runs long).
	write := func(name string, shot chromedp.Action[[]byte]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		defer cancel()
		buf, err := chromedp.Run(tctx, shot)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", filepath.Join(dir, name))
	}
	save := func(name string) { t.Helper(); write(name, chromedp.FullScreenshot(100)) }
	saveScreen := func(name string) { t.Helper(); write(name, chromedp.CaptureScreenshot()) }
	p.openServer("notes")
	// A drop, for the detail view's log and last drop.
	v, err := p.api.Server(ctx, "notes")
	if err != nil || v.Runtime.PID == 0 {
		t.Fatalf("the pid of notes: %+v, %v", v.Runtime, err)
	}
	if err := syscall.Kill(v.Runtime.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitJS("notes back", `document.getElementById("view-server").dataset.status === "connected" && `+detailOf("reconnects")+`.textContent === "1"`)

	p.waitJS("its plots and log", `document.querySelector('#server-detail svg[data-plot="calls"]') !== null
		&& [...document.querySelectorAll('#server-detail pre.logs .marker')].some(m => m.textContent.includes("--- connected"))`)
	p.waitJS("its new process", detailOf("pid")+`.dataset.pid !== ""`)
	save("web-server-detail.png")

	p.click(`#nav button[data-view="servers"]`)
	p.waitJS("the plots", `(document.querySelector('#daemon-plots svg[data-plot="calls"]') || {dataset: {}}).dataset.calls >= 17`)
	save("web-servers.png")

	p.click(`#nav button[data-view="servers"]`)
	p.rowAction("legacy-db", "test")
	p.waitJS("the test's phase", `document.querySelector('#server-detail [data-role="panel"] [data-role="phase"]') !== null`)
	save("web-test-failed.png")

	p.click(`#nav button[data-view="servers"]`)
	p.run("emulating 375 px", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(1)))
	save("web-phone.png")
	p.run("back to 1280 px", chromedp.EmulateViewport(windowWidth, windowHeight))

	p.click("#nav-add")
	p.fill("#f-name", "Bad_Name")
	p.fill("#f-command", "/bin/true")
	p.fill("#f-call", "-5")
	p.click("#save")
	p.waitJS("the name's error", `!document.getElementById("err-name").hidden`)
	save("web-field-errors.png")
	p.click("#cancel-form")

	p.openTool("files/slow")
	p.fill(argInput(p, "duration_ms"), "3000")
	p.fill(argInput(p, "interval_ms"), "300")
	p.click("#call-run")
	p.waitJS("half way", `(document.getElementById("call-progress").dataset.pct | 0) >= 40`)
	save("web-call-progress.png")
	p.waitJS("the result", `document.querySelector('#call-result [data-role="result"]') !== null`)

	p.openTool("files/elicit")
	p.fill(argInput(p, "message"), "Which branch should I deploy?")
	p.click("#call-run")
	p.waitJS("the question", `document.querySelector("#call-elicit input") !== null`)
	p.fill("#call-elicit input", "main")
	save("web-elicitation.png")
	p.click(`#call-elicit button[data-answer="cancel"]`)

	p.openTool("files/add")
	p.fill(argInput(p, "a"), "2")
	p.fill(argInput(p, "b"), "3")
	p.click("#call-run")
	p.waitJS("the result and its history entry", `document.querySelector('#call-result [data-role="result"]') !== null
		&& (document.querySelector('#history li') || {dataset: {}}).dataset.status === "ok"`)
	save("web-bench.png")

	// A toolset and its token made beforehand, a second one being made.
	if _, err := p.api.CreateToolset(ctx, &sb.Toolset{Name: "reader", Description: "read-only tools for the docs bot",
		Tools: []sb.Selector{{Server: "files", Tool: "echo"}, {Server: "search", Tool: "*"}}}); err != nil {
		t.Fatal(err)
	}
	bot, err := p.api.CreateToken(ctx, "docs-bot", []sb.Scope{sb.ToolsetScope("reader")})
	if err != nil {
		t.Fatal(err)
	}
	p.click(`#nav button[data-view="toolsets"]`)
	p.waitJS("the toolset and its token", `document.querySelector('li[data-toolset="reader"]') !== null
		&& document.querySelector('#tokens li[data-token="docs-bot"]') !== null`)
	p.click("#toolset-new")
	p.waitJS("the tools to pick", `document.querySelector('`+pick("files/add")+`') !== null`)
	p.fill("#ts-name", "coder")
	p.fill("#ts-desc", "the coder's tools")
	p.fill("#ts-filter", "add")
	p.click(pick("files/add") + ` input[data-role="pick"]`)
	p.fill(pick("files/add")+` input[data-role="as"]`, "plus")
	p.fill(pick("files/add")+` input[data-role="description"]`, "Adds a and b, for the coder.")
	p.fill("#ts-filter", "echo")
	p.click(pick("files/echo") + ` input[data-role="pick"]`)
	save("web-toolsets.png")
	p.click("#ts-cancel")

	// The audit log followed as a failing call comes in, after the token's
	// client called on its toolset's endpoint.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "docs-bot"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: p.d.URL + "/toolsets/reader/mcp", HTTPClient: &http.Client{Transport: bearer(bot.Secret)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, text := range []string{"README.md", "docs/audit.md"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]any{"text": text}}); err != nil {
			t.Fatal(err)
		}
	}
	p.click(`#nav button[data-view="audit"]`)
	p.click("#au-follow")
	p.waitJS("following", `document.getElementById("view-audit").dataset.following === "on"`)
	if _, err := p.api.Call(ctx, "github/fail", map[string]any{"message": "rate limited"}, client.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the failure on top", `(document.querySelector("#audit-body tr") || {dataset: {}}).dataset.outcome === "tool_error"`)
	p.do(`window.scrollTo(0, 0)`)
	saveScreen("web-audit.png")
}
