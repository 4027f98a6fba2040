package web_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// envScreenshots names the directory TestDocScreenshots writes the
// documentation's screenshots to (scripts/screenshots.sh sets it to docs/).
const envScreenshots = "SWITCHBOARD_SCREENSHOTS"

// TestDocScreenshots regenerates the screenshots of docs/ (README's
// web-servers.png among them) from a real serve with six servers, some
// calls, a failing one and a disabled one. It runs only when
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
	save := func(name string) {
		t.Helper()
		tctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		defer cancel()
		buf, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", filepath.Join(dir, name))
	}
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
}
