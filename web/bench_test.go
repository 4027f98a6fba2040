package web_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// rect is an element's bounding box on the page.
type rect struct{ Left, Top, Right, Bottom float64 }

func (p *page) rect(sel string) rect {
	p.t.Helper()
	var r rect
	p.eval(`(() => { const b = document.querySelector(`+jsString(sel)+`).getBoundingClientRect();
		return {Left: b.left, Top: b.top, Right: b.right, Bottom: b.bottom}; })()`, &r)
	return r
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestToolBenchSplitsAt1280AndStacksAt375: the tools are left of the call
// form on a wide screen, above it on a phone, and nothing scrolls sideways
// on either.
func TestToolBenchSplitsAt1280AndStacksAt375(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.openTool("work/add")
	p.shot("bench-1280")
	list, call := p.rect("#bench-list"), p.rect("#call-panel")
	if list.Right > call.Left || call.Top >= list.Bottom {
		t.Errorf("at 1280 px the tool list %+v is not beside the call form %+v", list, call)
	}
	var width int
	p.eval(`document.documentElement.scrollWidth`, &width)
	if width > windowWidth {
		t.Errorf("at 1280 px the page is %d px wide", width)
	}

	p.narrow()
	p.waitJS("the stacked layout", `document.getElementById("call-panel").getBoundingClientRect().top >=
		document.getElementById("bench-list").getBoundingClientRect().bottom`)
	p.shot("bench-375")
	list, call = p.rect("#bench-list"), p.rect("#call-panel")
	if call.Top < list.Bottom || call.Right > 375 {
		t.Errorf("at 375 px the call form %+v is not below the tool list %+v", call, list)
	}
	p.eval(`document.documentElement.scrollWidth`, &width)
	if width > 375 {
		t.Errorf("at 375 px the page is %d px wide", width)
	}
}

// historyEntry is what the newest entry of the call history shows.
type historyEntry struct {
	Status, Duration, Progress, Request, Response string
}

func (p *page) newestCall() historyEntry {
	p.t.Helper()
	var h historyEntry
	p.eval(`(() => { const li = document.querySelector("#history li"); if (!li) return {};
		const t = (r) => (li.querySelector('[data-role="' + r + '"]') || {}).textContent || "";
		return {Status: li.dataset.status, Duration: t("call-duration"), Progress: t("call-progress"),
			Request: t("rpc-request"), Response: t("rpc-response")}; })()`, &h)
	return h
}

// TestCallHistoryShowsTheRawRequestAndResponse: a call made on the bench
// lands in the history with its status, duration, the JSON-RPC request
// sent (the tool's own name, the arguments) and the response (the
// server's result); a call without progress shows no progress bar; the
// history outlives a reload; and the commands it copies do the same call,
// with curl reading the credential from a variable, never holding it.
func TestCallHistoryShowsTheRawRequestAndResponse(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.openTool("work/add")
	p.fill(argInput(p, "a"), "2")
	p.fill(argInput(p, "b"), "3")
	p.do(`window.barShown = false; new MutationObserver(() => { if (!document.getElementById("call-progress").hidden) window.barShown = true; })
		.observe(document.getElementById("call-progress"), {attributes: true})`)
	p.click("#call-run")
	p.waitJS("the result", `document.querySelector('#call-result [data-role="result"]') !== null`)
	p.waitJS("the call in the history", `document.querySelector('#history li[data-status="ok"]') !== null`)
	p.shot("history")

	h := p.newestCall()
	var req struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  struct {
			Name      string             `json:"name"`
			Arguments map[string]float64 `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(h.Request), &req); err != nil || req.JSONRPC != "2.0" || req.Method != "tools/call" ||
		req.Params.Name != "add" || req.Params.Arguments["a"] != 2 || req.Params.Arguments["b"] != 3 {
		t.Errorf("the request shown is %q (%v)", h.Request, err)
	}
	var resp struct {
		JSONRPC string `json:"jsonrpc"`
		Result  struct {
			Content []struct{ Type, Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(h.Response), &resp); err != nil || resp.JSONRPC != "2.0" ||
		len(resp.Result.Content) != 1 || resp.Result.Content[0].Text != "5" {
		t.Errorf("the response shown is %q (%v)", h.Response, err)
	}
	if !regexp.MustCompile(`^\d+ ms$`).MatchString(h.Duration) {
		t.Errorf("the duration shown is %q", h.Duration)
	}
	var barShown bool
	p.eval(`window.barShown || !document.getElementById("call-progress").hidden`, &barShown)
	if barShown || h.Progress != "no progress reported" {
		t.Errorf("a call without progress: bar shown %v, history says %q", barShown, h.Progress)
	}

	// Copied as switchboard call, it runs as it reads and answers the same.
	p.click(`#history li button[data-copy="cli"]`)
	p.waitJS("the command", `document.getElementById("copy-text").textContent.startsWith("switchboard call")`)
	cli := p.text("#copy-text")
	if want := "switchboard call --addr " + p.d.URL + ` work/add '{"a":2,"b":3}'`; cli != want {
		t.Errorf("copied as switchboard call: %q, want %q", cli, want)
	}
	if out := p.shell(cli, nil); strings.TrimSpace(out) != "5" {
		t.Errorf("%s printed %q, want 5", cli, out)
	}

	p.click(`#history li button[data-copy="curl"]`)
	p.waitJS("the curl command", `document.getElementById("copy-text").textContent.startsWith("curl")`)
	curl := p.text("#copy-text")
	var csrf string
	p.eval(`localStorage.getItem("switchboard.csrf")`, &csrf)
	if !strings.Contains(curl, `"Authorization: Bearer $SWITCHBOARD_TOKEN"`) || strings.Contains(curl, p.d.Token) ||
		(csrf != "" && strings.Contains(curl, csrf)) || !strings.Contains(curl, p.d.URL+"/api/v1/call") {
		t.Errorf("copied as curl: %q (must name $SWITCHBOARD_TOKEN, never a credential)", curl)
	}
	if _, err := exec.LookPath("curl"); err == nil {
		out := p.shell(curl, []string{"SWITCHBOARD_TOKEN=" + p.d.Token})
		if !strings.Contains(out, "event: result") || !strings.Contains(out, `"text":"5"`) {
			t.Errorf("the curl command printed %q", out)
		}
	} else {
		t.Log("no curl on PATH: the copied curl command is checked as text only")
	}

	p.run("reloading", chromedp.Reload())
	p.waitJS("the logged-in page", `document.body.dataset.state === "app"`)
	p.click(`#nav button[data-view="tools"]`)
	p.waitJS("the history after the reload", `document.querySelector('#history li[data-status="ok"]') !== null`)
	if again := p.newestCall(); again.Request != h.Request || again.Response != h.Response {
		t.Errorf("after a reload the history shows %+v, before %+v", again, h)
	}
}

// shell runs a copied command with sh, as a person pasting it would: the
// switchboard binary on PATH and the daemon's user's config directory
// (where the CLI finds the credential). It returns its stdout.
func (p *page) shell(command string, env []string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(daemontest.Environ("PATH="+filepath.Dir(daemontest.Binary(p.t))+":"+os.Getenv("PATH"),
		"XDG_CONFIG_HOME="+p.d.ConfigDir), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stop := context.AfterFunc(ctx, func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	defer stop()
	out, err := cmd.Output()
	if err != nil {
		p.t.Errorf("%s: %v; stderr: %s", command, err, stderr.String())
	}
	return string(out)
}

// TestCallButtonIsDisabledWhileACallRuns: while a call runs its Call
// button is disabled and submitting the form again starts nothing; its
// history entry counts its progress; cancelled, the history says so.
func TestCallButtonIsDisabledWhileACallRuns(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.openTool("work/slow")
	p.fill(argInput(p, "duration_ms"), "600000")
	p.fill(argInput(p, "interval_ms"), "100")
	p.click("#call-run")
	p.waitJS("the running call's progress in the history", `document.querySelector('#history li[data-status="running"]') !== null
		&& !document.getElementById("call-progress").hidden
		&& /^\d+ progress reports?, the last \d+%: step \d+\/6000$/.test(document.querySelector('#history li [data-role="call-progress"]').textContent)`)
	p.shot("running")
	var disabled, busy bool
	p.eval(`document.getElementById("call-run").disabled`, &disabled)
	p.eval(`document.getElementById("call-run").getAttribute("aria-busy") === "true"`, &busy)
	if !disabled || !busy {
		t.Errorf("while the call runs, Call is disabled %v, busy %v", disabled, busy)
	}
	p.do(`document.getElementById("call-form").requestSubmit()`)
	var n int
	p.eval(`document.querySelectorAll("#history li").length`, &n)
	if n != 1 {
		t.Errorf("submitting during a call: %d calls in the history, want 1", n)
	}
	p.click("#call-cancel")
	p.waitJS("the cancelled call", `document.querySelector('#history li[data-status="cancelled"]') !== null
		&& !document.getElementById("call-run").disabled`)
	if h := p.newestCall(); !regexp.MustCompile(`^\d+ ms$`).MatchString(h.Duration) {
		t.Errorf("the cancelled call's duration reads %q", h.Duration)
	}
}

// TestToolSearchUsesTheDaemonsRanking: where the daemon ranks a search
// (GET /api/v1/tools?search= answers scores), the list shows its answer,
// best first: "adding numbers" finds work/add, which no substring of the
// query names. A daemon without ranked search skips the test.
func TestToolSearchUsesTheDaemonsRanking(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	var scored bool
	p.eval(`fetch("/api/v1/tools?search=add&limit=5", {headers: {"X-Switchboard-CSRF": localStorage.getItem("switchboard.csrf")}})
		.then(r => r.ok ? r.json() : {tools: []}).then(b => (b.tools || []).length > 0 && b.tools.every(h => typeof h.score === "number"))`, &scored)
	if !scored {
		t.Skip("this daemon does not rank GET /api/v1/tools?search= (no score): the page filters by itself, as the other tests see")
	}
	p.click(`#nav button[data-view="tools"]`)
	p.fill("#tool-search", "adding numbers")
	p.waitJS("the ranked list", `document.getElementById("tools-count").textContent.endsWith("best first")`)
	p.shot("ranked")
	var first string
	p.eval(`(document.querySelector("#tools button[data-tool]") || {}).dataset.tool`, &first)
	if first != "work/add" {
		t.Errorf("searching \"adding numbers\", the first tool is %q, want work/add", first)
	}
}
