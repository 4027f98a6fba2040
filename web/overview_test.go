package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// addBroken creates a server whose command does not exist, with one
// attempt before "error", and waits for the page to show it failing.
func (p *page) addBroken(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cfg := &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "/nonexistent/" + name,
		Retry: &sb.RetryConfig{MaxAttempts: 1}}
	if _, err := p.api.CreateServer(ctx, cfg); err != nil {
		p.t.Fatalf("creating %s: %v", name, err)
	}
	p.waitJS(name+" failing on the page", card(name)+` !== null && `+card(name)+`.dataset.status === "error"`)
}

// call calls a tool through the API, as a client other than the page.
func (p *page) call(tool string, args map[string]any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if _, err := p.api.Call(ctx, tool, args, client.CallOptions{}); err != nil {
		p.t.Fatalf("calling %s: %v", tool, err)
	}
}

// layout checks the page at its current width: nothing scrolls sideways,
// the header is one row, and the nav marks nav as the current section.
func (p *page) layout(view string, width int, nav string) {
	p.t.Helper()
	var got struct {
		Width   int    `json:"width"`
		Rows    int    `json:"rows"`
		Current string `json:"current"`
	}
	p.eval(`(() => {
		const tops = new Set();
		for (const c of document.querySelector("header.top").children) {
			const r = c.getBoundingClientRect();
			if (r.width && r.height) tops.add(Math.round(r.top + r.height / 2) >> 3);
		}
		const cur = document.querySelector('#nav button[aria-current="page"]');
		return {width: document.documentElement.scrollWidth, rows: tops.size, current: cur ? cur.dataset.view : ""};
	})()`, &got)
	if got.Width > width {
		p.t.Errorf("%s view at %d px: %d px wide", view, width, got.Width)
	}
	if got.Rows != 1 {
		p.t.Errorf("%s view at %d px: the header takes %d rows", view, width, got.Rows)
	}
	if got.Current != nav {
		p.t.Errorf("%s view at %d px: the nav marks %q, want %q", view, width, got.Current, nav)
	}
}

// TestEveryViewAtDesktopAndPhoneWidths: each view (the overview, a
// server's detail, the form adding and editing, tools, audit, import)
// fits 1280 and 375 px without sideways scrolling, with a one-row header
// whose nav marks the section the view belongs to (editing a server is
// Servers, not "Add server").
func TestEveryViewAtDesktopAndPhoneWidths(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("files")
	p.addBroken("broken")
	for _, width := range []int{windowWidth, 375} {
		if width != windowWidth {
			p.narrow()
		}
		w := fmt.Sprint(width)
		p.click(`#nav button[data-view="servers"]`)
		p.waitJS("the overview", `!document.getElementById("view-servers").hidden`)
		p.layout("servers", width, "servers")
		p.shot("servers-" + w)

		p.openServer("broken")
		p.waitJS("the full error", detailOf("error")+` !== null && !`+detailOf("error")+`.hidden`)
		p.layout("server", width, "servers")
		p.shot("server-" + w)

		p.click(`#nav button[data-view="servers"]`)
		p.rowAction("files", "edit")
		p.waitJS("the form", `!document.getElementById("view-form").hidden`)
		p.layout("form (edit)", width, "servers")
		p.shot("edit-" + w)
		p.click("#cancel-form")

		p.click("#nav-add")
		p.layout("form (add)", width, "form")
		for _, view := range []string{"tools", "audit", "import"} {
			p.click(fmt.Sprintf(`#nav button[data-view=%q]`, view))
			p.waitJS("the "+view+" view", fmt.Sprintf(`!document.getElementById("view-%s").hidden`, view))
			p.layout(view, width, view)
			p.shot(view + "-" + w)
		}
	}
	if txt := p.text(`#servers tr[data-server="broken"] [data-role="error"]`); !strings.Contains(txt, "command_not_found") {
		t.Errorf("the failing row reads %q, want its phase and code", txt)
	}
}

// TestOverviewSortsAndFilters: the column buttons order the rows (failing
// first by status), the filter keeps the rows it matches, the status
// select those of one status.
func TestOverviewSortsAndFilters(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("alpha")
	p.addServer("zulu")
	p.addBroken("mike")
	order := func() string {
		var names []string
		p.eval(`[...document.querySelectorAll("#servers-body tr:not([hidden])")].map(r => r.dataset.server)`, &names)
		return strings.Join(names, " ")
	}
	if got := order(); got != "alpha mike zulu" {
		t.Errorf("by name: %q", got)
	}
	p.click(`#servers th[data-sort="name"] button`)
	if got := order(); got != "zulu mike alpha" {
		t.Errorf("by name, descending: %q", got)
	}
	p.click(`#servers th[data-sort="status"] button`)
	if got := order(); got != "mike alpha zulu" {
		t.Errorf("by status: %q, want the failing one first", got)
	}
	p.fill("#server-filter", "command_not")
	if got := order(); got != "mike" {
		t.Errorf("filtered by the error's code: %q", got)
	}
	p.fill("#server-filter", "")
	p.do(`document.getElementById("server-filter").dispatchEvent(new Event("input"))`)
	p.do(`const s = document.getElementById("server-status"); s.value = "connected"; s.dispatchEvent(new Event("change"))`)
	if got := order(); got != "alpha zulu" {
		t.Errorf("only the connected: %q", got)
	}
	p.shot("filtered")
}

// TestPlotsChangeAfterCalls: calls made by another client show in the
// daemon's plot and in the row's counts (errors apart), and in the
// server's own plot in its detail view.
func TestPlotsChangeAfterCalls(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.waitJS("the daemon's plot", `document.querySelector('#daemon-plots svg[data-plot="calls"]') !== null`)
	var before int
	p.eval(`document.querySelector('#daemon-plots svg[data-plot="calls"]').dataset.calls | 0`, &before)
	bars := func(sel string) int {
		var n int
		p.eval(fmt.Sprintf(`document.querySelectorAll('%s svg[data-plot="calls"] .bars:not(.errors) rect').length`, sel), &n)
		return n
	}
	if before != 0 || bars("#daemon-plots") != 0 {
		t.Fatalf("before any call the plot counts %d calls in %d bars", before, bars("#daemon-plots"))
	}
	for range 3 {
		p.call("work/add", map[string]any{"a": 1, "b": 2})
	}
	p.call("work/fail", map[string]any{"message": "no"})
	p.waitJS("the calls plotted", `(document.querySelector('#daemon-plots svg[data-plot="calls"]').dataset.calls | 0) === 4`)
	p.waitJS("the row's counts", card("work")+`.querySelector('[data-role="calls"]').textContent === "4"
		&& `+card("work")+`.querySelector('[data-role="errors"]').textContent === "1"`)
	if n := bars("#daemon-plots"); n < 1 {
		t.Errorf("%d bars after the calls", n)
	}
	var errBars, latency int
	p.eval(`document.querySelectorAll('#daemon-plots svg[data-plot="calls"] .bars.errors rect').length`, &errBars)
	p.eval(`document.querySelectorAll('#daemon-plots svg[data-plot="latency"] .line circle, #daemon-plots svg[data-plot="latency"] .line polyline').length`, &latency)
	if errBars < 1 || latency < 2 {
		t.Errorf("%d error bars, %d latency marks (p50 and p99)", errBars, latency)
	}
	if p50 := p.text(`#servers tr[data-server="work"] [data-role="p50"]`); !strings.HasSuffix(p50, "ms") && !strings.HasSuffix(p50, " s") {
		t.Errorf("the row's p50 reads %q", p50)
	}
	p.shot("daemon-plotted")

	p.openServer("work")
	p.waitJS("the server's plot", `(document.querySelector('#server-detail svg[data-plot="calls"]') || {dataset: {}}).dataset.calls === "4"`)
	p.shot("server-plotted")
}

// TestStatusIsUnknownWhileServeIsDown: when serve stops, the page stops
// vouching for any status: every row reads unknown, greyed, since when;
// when serve is back on the same address, the statuses come back without
// a reload.
func TestStatusIsUnknownWhileServeIsDown(t *testing.T) {
	dir := t.TempDir()
	o := daemontest.Options{NoAuth: true, DB: "sqlite:" + filepath.Join(dir, "switchboard.db"), Dir: dir, ConfigDir: filepath.Join(dir, "config")}
	p := newPageOf(t, o)
	p.run("opening the page", chromedp.Navigate(p.d.URL+"/"))
	p.waitJS("the page", `document.body.dataset.state === "app"`)
	p.do(`window.notReloaded = true`)
	p.addServer("steady")
	p.openServer("steady")
	p.click(`#nav button[data-view="servers"]`)

	o.Listen = strings.TrimPrefix(p.d.URL, "http://")
	if err := p.d.Stop(); err != nil {
		t.Fatal(err)
	}
	p.waitJS("every status unknown", card("steady")+`.dataset.status === "unknown" && document.body.dataset.live === "off"`)
	since := p.text(`#servers tr[data-server="steady"] [data-role="since"]`)
	if !strings.HasPrefix(since, "since ") || len(since) != len("since 15:04:05") {
		t.Errorf("the unknown status reads since %q", since)
	}
	if badge := p.text(`#servers tr[data-server="steady"] [data-role="status"]`); badge != "unknown" {
		t.Errorf("the badge reads %q while serve is down", badge)
	}
	p.shot("serve-down")

	p.d = daemontest.Start(t, o)
	p.waitJS("the status back", card("steady")+`.dataset.status === "connected" && document.body.dataset.live === "on"`, 2*stepTimeout)
	if since := p.text(`#servers tr[data-server="steady"] [data-role="since"]`); since != "" {
		t.Errorf("back live, the row still reads %q", since)
	}
	var reloaded bool
	p.eval(`window.notReloaded !== true`, &reloaded)
	if reloaded {
		t.Error("the page was reloaded")
	}
	p.shot("serve-back")
}
