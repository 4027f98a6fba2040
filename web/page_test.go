package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
)

// addServer creates a stdio testserver through the API (setup, not what
// a test looks at) and waits for the page to show it connected.
func (p *page) addServer(name string, args ...string) {
	p.t.Helper()
	cfg := &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(p.t), Args: args}
	// serve sandboxes stdio servers by default: a host path the test server
	// writes (its -events file) must be mounted, read-write, and be the
	// servers' (as root, serve runs them as its sandbox user).
	for i, a := range args {
		if a == "-events" && i+1 < len(args) {
			dir := filepath.Dir(args[i+1])
			cfg.Sandbox = &sb.SandboxConfig{Mounts: []sb.Mount{{Host: dir, Mode: sb.MountReadWrite}}}
			sandboxtest.GiveToServeServers(p.t, dir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if _, err := p.api.CreateServer(ctx, cfg); err != nil {
		p.t.Fatalf("creating %s: %v", name, err)
	}
	p.waitJS(name+" connected on the page", card(name)+`.dataset.status === "connected"`)
}

// card is the JavaScript expression of a server's row in the overview.
func card(name string) string {
	return fmt.Sprintf(`document.querySelector('#servers tr[data-server=%q]')`, name)
}

// rowAction opens the action menu of a server's row and clicks action
// (toggle, restart, test, tools, edit, audit, delete, open).
func (p *page) rowAction(name, action string) {
	p.t.Helper()
	p.click(fmt.Sprintf(`#servers tr[data-server=%q] summary[data-role="menu"]`, name))
	p.click(fmt.Sprintf(`#servers tr[data-server=%q] .menu-items button[data-action=%q]`, name, action))
}

// openServer opens a server's detail view from its row.
func (p *page) openServer(name string) {
	p.t.Helper()
	p.click(fmt.Sprintf(`#servers tr[data-server=%q] td[data-col="name"] button`, name))
	p.waitJS("the detail view of "+name, fmt.Sprintf(`!document.getElementById("view-server").hidden && document.getElementById("server-title").textContent === %q`, name))
}

// detailOf is the JavaScript expression of an element of the detail view.
func detailOf(role string) string {
	return fmt.Sprintf(`document.querySelector('#server-detail [data-role=%q]')`, role)
}

// openTool opens the call form of tool from the tools view.
func (p *page) openTool(address string) {
	p.t.Helper()
	p.click(`#nav button[data-view="tools"]`)
	p.fill("#tool-search", address[strings.IndexByte(address, '/')+1:])
	p.click(fmt.Sprintf(`button[data-tool=%q]`, address))
	p.waitJS("the call form of "+address, `!document.getElementById("call-panel").hidden`)
}

// argInput is the CSS selector of the generated input labelled label in
// the call form.
func argInput(p *page, label string) string {
	p.t.Helper()
	var id string
	p.eval(fmt.Sprintf(`(() => { for (const l of document.querySelectorAll("#call-args label")) {
		if (l.textContent.startsWith(%q)) return l.htmlFor; } return ""; })()`, label), &id)
	if id == "" {
		p.t.Fatalf("the call form has no input labelled %q", label)
	}
	return "#" + id
}

// TestLoginLinkLogsTheBrowserInOnce: the link "switchboard web" prints
// logs the browser in; the CSRF token leaves the address bar and the
// session cookie is out of the script's reach; the same link refuses a
// second browser.
func TestLoginLinkLogsTheBrowserInOnce(t *testing.T) {
	p := newPage(t)
	link := p.loginLink()
	p.run("opening the login link", chromedp.Navigate(link))
	p.waitJS("the logged-in page", `document.body.dataset.state === "app"`)
	p.shot("logged-in")
	var loc, cookies string
	p.eval(`location.href`, &loc)
	p.eval(`document.cookie`, &cookies)
	if loc != p.d.URL+"/" {
		t.Errorf("after login the address is %q, want %q (no code, no token)", loc, p.d.URL+"/")
	}
	if strings.Contains(cookies, "switchboard_session") {
		t.Errorf("the session cookie is readable by scripts: %q", cookies)
	}

	p.run("opening the link again", chromedp.Navigate(link))
	p.waitJS("the refusal", `document.body.innerText.includes("cannot be used")`)
	p.shot("link-used-twice")
}

// TestPageRefusesToWorkWithoutTheCredential: without a login the page
// shows how to log in and the API answers it nothing; a made-up code is
// refused; and a logged-in browser's cookie opens nothing without the
// CSRF token the page keeps.
func TestPageRefusesToWorkWithoutTheCredential(t *testing.T) {
	p := newPage(t)
	p.addServerViaAPIOnly("hidden")
	p.run("opening the page", chromedp.Navigate(p.d.URL+"/"))
	p.waitJS("the login view", `document.body.dataset.state === "login"`)
	p.shot("not-logged-in")
	if txt := p.text("#view-login"); !strings.Contains(txt, "switchboard web") {
		t.Errorf("the login view does not say how to log in: %q", txt)
	}
	if n := p.text("#servers"); strings.Contains(n, "hidden") {
		t.Errorf("the page shows a server without a login: %q", n)
	}
	var status int
	p.eval(`fetch("/api/v1/servers").then(r => r.status)`, &status)
	if status != 401 {
		t.Errorf("GET /api/v1/servers from the page without a login: %d, want 401", status)
	}

	p.run("a made-up login code", chromedp.Navigate(p.d.URL+"/ui/login?code="+strings.Repeat("ab", 32)))
	p.waitJS("the refusal", `document.body.innerText.includes("cannot be used")`)

	p.login()
	var statuses []int
	p.eval(`Promise.all([
		fetch("/api/v1/servers").then(r => r.status),
		fetch("/api/v1/test", {method: "POST", headers: {"Content-Type": "application/json"},
			body: JSON.stringify({name: "probe", transport: "stdio", command: "/bin/true"})}).then(r => r.status),
		fetch("/api/v1/login-codes", {method: "POST", headers: {"X-Switchboard-CSRF": localStorage.getItem("switchboard.csrf")}}).then(r => r.status),
		fetch("/api/v1/servers", {headers: {"X-Switchboard-CSRF": localStorage.getItem("switchboard.csrf")}}).then(r => r.status),
	])`, &statuses)
	if fmt.Sprint(statuses) != "[401 401 401 200]" {
		t.Errorf("from the logged-in page: cookie alone GET %d, cookie alone POST %d, login code with the session %d, cookie and token %d; want 401 401 401 200",
			statuses[0], statuses[1], statuses[2], statuses[3])
	}
}

// addServerViaAPIOnly creates a disabled server without looking at the
// page.
func (p *page) addServerViaAPIOnly(name string) {
	p.t.Helper()
	off := false
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if _, err := p.api.CreateServer(ctx, &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "/nonexistent/" + name, Enabled: &off}); err != nil {
		p.t.Fatal(err)
	}
}

// TestServerAddedThroughTheFormTurnsConnectedLive: a server created with
// the form appears, and turns connected with its tools, without the page
// being reloaded.
func TestServerAddedThroughTheFormTurnsConnectedLive(t *testing.T) {
	p := newLoggedInPage(t)
	p.do(`window.notReloaded = true`)
	p.click("#nav-add")
	p.fill("#f-name", "files")
	p.fill("#f-command", testserver.Binary(t))
	p.fill("#f-args", "-name\nfiles-server")
	p.click("#add-env")
	p.fill("#f-env .kv-row:last-child .kv-key", "API_KEY")
	p.fill("#f-env .kv-row:last-child .kv-val", "sekrit-value")
	p.fill("#f-call", "30000")
	p.shot("form-filled")
	p.click("#save")
	p.waitJS("the new card", card("files")+` !== null`)
	p.waitJS("files connected", card("files")+`.dataset.status === "connected"`)
	p.shot("connected")
	var reloaded bool
	p.eval(`window.notReloaded !== true`, &reloaded)
	if reloaded {
		t.Fatal("the page was reloaded")
	}
	p.waitJS("its tools counted", `(`+card("files")+`.querySelector('[data-role="tool-count"]').textContent | 0) >= 10`)

	// Editing shows the stored secret masked, and keeps it when untouched.
	p.rowAction("files", "edit")
	var masked string
	p.eval(`document.querySelector("#f-env .kv-val").value`, &masked)
	if masked != sb.SecretMask {
		t.Errorf("the stored secret is shown as %q", masked)
	}
	p.click("#save")
	p.waitJS("the servers view", `!document.getElementById("view-servers").hidden`)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	v, err := p.api.Server(ctx, "files")
	if err != nil || v.Version != 2 || v.CallTimeoutMS != 30000 {
		t.Fatalf("after the edit: %+v, %v", v, err)
	}
}

// TestKilledServerGoesDownAndComesBackLive: when a server's process is
// killed the page shows it drop (status, last drop, reconnect count) and
// come back with a new process, from the event stream alone.
func TestKilledServerGoesDownAndComesBackLive(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("victim")
	p.openServer("victim")
	p.waitJS("the process id", detailOf("pid")+`.dataset.pid !== ""`)
	var pid int
	p.eval(detailOf("pid")+`.dataset.pid | 0`, &pid)
	if pid <= 0 {
		t.Fatalf("no pid in the detail view")
	}
	// Every status the row shows from now on.
	p.do(`window.seen = []; new MutationObserver(() => window.seen.push(` + card("victim") + `.dataset.status))
		.observe(` + card("victim") + `, {attributes: true, attributeFilter: ["data-status"]})`)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the drop and the reconnect", `window.seen.some(s => s !== "connected") && `+card("victim")+`.dataset.status === "connected"
		&& `+detailOf("reconnects")+`.textContent === "1"`)
	p.waitJS("the last drop and the new process", `!`+detailOf("last-drop")+`.hidden
		&& (`+detailOf("pid")+`.dataset.pid | 0) > 0 && (`+detailOf("pid")+`.dataset.pid | 0) !== `+strconv.Itoa(pid))
	// The log shows the attempt that followed, as logs -f does.
	p.waitJS("the new attempt in the log", `[...document.querySelectorAll('#server-detail pre.logs .marker')].some(m => /starting \(attempt 1\)/.test(m.textContent))`)
	p.shot("reconnected")
	var seen []string
	p.eval(`window.seen`, &seen)
	var newPID int
	p.eval(detailOf("pid")+`.dataset.pid | 0`, &newPID)
	if newPID == pid || newPID == 0 {
		t.Errorf("pid %d after the reconnect, was %d", newPID, pid)
	}
	if drop := p.text(`#server-detail [data-role="last-drop"]`); !strings.Contains(drop, "process_exited") {
		t.Errorf("last drop reads %q", drop)
	}
	if drop := p.text(`#servers tr[data-server="victim"] [data-role="last-drop"]`); !strings.Contains(drop, "process_exited") {
		t.Errorf("the row's last drop reads %q", drop)
	}
	t.Logf("statuses shown: %v", seen)
}

// TestBrokenConfigTestShowsItsPhase: the test button on a draft that
// cannot start, and on such a stored server, says it failed in phase
// spawn, with the code.
func TestBrokenConfigTestShowsItsPhase(t *testing.T) {
	p := newLoggedInPage(t)
	p.click("#nav-add")
	p.fill("#f-name", "broken")
	p.fill("#f-command", "/nonexistent/mcp-server")
	p.click("#test-draft")
	p.waitJS("the draft's test result", `document.querySelector('#draft-result [data-role="phase"]') !== null`)
	p.shot("draft-test-failed")
	if phase := p.text(`#draft-result [data-role="phase"]`); phase != string(sb.PhaseSpawn) {
		t.Errorf("draft test: phase %q", phase)
	}
	if code := p.text(`#draft-result [data-role="code"]`); code != string(sb.CodeCommandNotFound) {
		t.Errorf("draft test: code %q", code)
	}

	p.click("#cancel-form")
	p.addServerViaAPIOnly("stored")
	p.waitJS("the stored server's card", card("stored")+` !== null`)
	p.rowAction("stored", "test")
	p.waitJS("the stored server's test result", `document.querySelector('#server-detail [data-role="panel"] [data-role="phase"]') !== null`)
	if phase := p.text(`#server-detail [data-role="panel"] [data-role="phase"]`); phase != string(sb.PhaseSpawn) {
		t.Errorf("stored test: phase %q", phase)
	}
	p.shot("stored-test-failed")
}

// TestSlowToolCallFillsTheProgressBar: a call of a tool that reports
// progress moves the bar, step by step, to 100 %, then shows the result.
func TestSlowToolCallFillsTheProgressBar(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.openTool("work/slow")
	p.fill(argInput(p, "duration_ms"), "2000")
	p.fill(argInput(p, "interval_ms"), "400")
	p.do(`window.pcts = []; new MutationObserver(() => window.pcts.push(document.getElementById("call-pct").textContent))
		.observe(document.getElementById("call-pct"), {childList: true, characterData: true, subtree: true})`)
	p.click("#call-run")
	p.waitJS("some progress", `window.pcts.length > 0`)
	p.shot("in-progress")
	p.waitJS("the result", `document.querySelector('#call-result [data-role="result"]') !== null`)
	p.shot("done")
	var pcts []string
	p.eval(`window.pcts`, &pcts)
	var value, max float64
	p.eval(`document.getElementById("call-bar").value`, &value)
	p.eval(`document.getElementById("call-bar").max`, &max)
	if len(pcts) < 3 || pcts[len(pcts)-1] != "100%" || value != max {
		t.Errorf("progress shown %v, bar %v of %v; want steps up to 100%%", pcts, value, max)
	}
	if res := p.text("#call-result"); !strings.Contains(res, "done after 2000ms") {
		t.Errorf("result %q", res)
	}
}

// TestCancelledCallStopsAndSaysSo: cancel ends a running call, the page
// says so, and the server is told (its handler sees the cancellation).
func TestCancelledCallStopsAndSaysSo(t *testing.T) {
	p := newLoggedInPage(t)
	events := testserver.EventsFile(t)
	p.addServer("long", "-events", events)
	p.openTool("long/slow")
	p.fill(argInput(p, "duration_ms"), "60000")
	p.fill(argInput(p, "interval_ms"), "200")
	p.click("#call-run")
	p.waitJS("some progress", `document.getElementById("call-pct").textContent !== ""`)
	p.click("#call-cancel")
	p.waitJS("the cancellation", `document.querySelector('#call-result [data-outcome="cancelled"]') !== null`)
	p.shot("cancelled")
	testserver.WaitEvent(t, events, func(e testserver.Event) bool { return e.Event == "cancelled" && e.Tool == "slow" }, stepTimeout)
	var runDisabled bool
	p.eval(`document.getElementById("call-run").disabled`, &runDisabled)
	if runDisabled {
		t.Error("the call button stays disabled after the cancel")
	}
}

// TestElicitationIsAnsweredFromThePage: a server's question during a call
// becomes a form; its answer reaches the tool.
func TestElicitationIsAnsweredFromThePage(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("asker")
	p.openTool("asker/elicit")
	p.fill(argInput(p, "message"), "What is the answer?")
	p.click("#call-run")
	p.waitJS("the question", `!document.getElementById("call-elicit").hidden && document.querySelector("#call-elicit input") !== null`)
	if q := p.text(`#call-elicit [data-role="elicit-message"]`); q != "What is the answer?" {
		t.Errorf("question %q", q)
	}
	p.fill("#call-elicit input", "42")
	p.shot("question")
	p.click(`#call-elicit button[data-answer="accept"]`)
	p.waitJS("the result", `document.querySelector('#call-result [data-role="result"]') !== null`)
	p.shot("answered")
	if res := p.text("#call-result"); !strings.Contains(res, "answer: 42") {
		t.Errorf("result %q", res)
	}
}

// TestFieldErrorAppearsBesideItsField: the API's field errors appear
// beside their fields, marked invalid, and focus moves to the first.
func TestFieldErrorAppearsBesideItsField(t *testing.T) {
	p := newLoggedInPage(t)
	p.click("#nav-add")
	p.fill("#f-name", "Bad_Name")
	p.fill("#f-command", "/bin/true")
	p.fill("#f-call", "-5")
	p.click("#save")
	p.waitJS("the name's error", `!document.getElementById("err-name").hidden`)
	p.shot("field-errors")
	if msg := p.text("#err-name"); !strings.Contains(msg, "must be lowercase letters") {
		t.Errorf("name error %q", msg)
	}
	if msg := p.text("#err-call_timeout_ms"); !strings.Contains(msg, "must not be negative") {
		t.Errorf("call timeout error %q", msg)
	}
	var beside, invalid bool
	var focused string
	p.eval(`document.getElementById("err-name").closest(".field") === document.getElementById("f-name").closest(".field")`, &beside)
	p.eval(`document.getElementById("f-name").getAttribute("aria-invalid") === "true"`, &invalid)
	p.eval(`document.activeElement.id`, &focused)
	if !beside || !invalid || focused != "f-name" {
		t.Errorf("beside its field %v, marked invalid %v, focus on %q", beside, invalid, focused)
	}
	if !p.textHidden("#form-error") {
		t.Errorf("field errors also went above the form: %q", p.text("#form-error"))
	}
}

// textHidden reports whether the element is hidden.
func (p *page) textHidden(sel string) bool {
	var hidden bool
	p.eval(fmt.Sprintf(`document.querySelector(%q).hidden`, sel), &hidden)
	return hidden
}

// TestPageFitsANarrowScreen: at 375 px wide nothing scrolls sideways, in
// the server list, the form, the tools, the toolsets, the audit log and
// the import.
func TestPageFitsANarrowScreen(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("phone")
	p.narrow()
	for _, view := range []string{"servers", "form", "tools", "toolsets", "audit", "import"} {
		p.click(fmt.Sprintf(`#nav button[data-view=%q]`, view))
		time.Sleep(100 * time.Millisecond)
		var width int
		p.eval(`document.documentElement.scrollWidth`, &width)
		if width > 375 {
			t.Errorf("%s view: %d px wide at 375", view, width)
		}
		p.shot("narrow-" + view)
	}
}
