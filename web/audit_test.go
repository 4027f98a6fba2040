package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// auditRow is an entry of the audit view as the page shows it.
type auditRow struct {
	ID        int64  `json:"id"`
	Server    string `json:"server"`
	Outcome   string `json:"outcome"`
	Principal string `json:"principal"`
	Surface   string `json:"surface"`
	What      string `json:"what"`
	Duration  string `json:"duration"`
	Bytes     string `json:"bytes"`
}

// auditRows returns the rows of the audit view, top first.
func (p *page) auditRows() []auditRow {
	p.t.Helper()
	var rows []auditRow
	p.eval(`[...document.querySelectorAll("#audit-body tr")].map(tr => {
		const c = (col) => tr.querySelector('td[data-col="' + col + '"]').textContent;
		return {id: +tr.dataset.id, server: tr.dataset.server, outcome: c("outcome"), principal: c("principal"),
			surface: c("surface"), what: c("what"), duration: c("duration"), bytes: c("bytes")};
	})`, &rows)
	return rows
}

// waitAudit waits until the audit log (read through the API) holds n
// entries that f selects: serve writes them in batches, up to a second
// after the calls.
func (p *page) waitAudit(f client.AuditFilter, n int) []api.AuditEntry {
	p.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		es, err := p.api.Audit(ctx, f)
		cancel()
		if err == nil && len(es) >= n {
			return es
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %d audit entries of %+v: %d, %v", n, f, len(es), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mcpClient connects a go-sdk client to serve's /mcp with the daemon's
// credential.
func (p *page) mcpClient() *mcp.ClientSession {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "auditee"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: p.d.URL + "/mcp", HTTPClient: &http.Client{Transport: p.d.Transport(nil)}}, nil)
	if err != nil {
		p.t.Fatalf("connecting to /mcp: %v", err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return cs
}

// stallDump is how long an MCP call may run before mcpCall has both ends
// say where they wait: shortly before stepTimeout fails the call, so that
// a call that fails leaves its evidence (one of 520 took over 20 s at
// load 19, and the log said only that it was cancelled). It bounds
// nothing a passing run needs.
const stallDump = stepTimeout - 2*time.Second

// mcpCall calls a tool of /mcp through cs, bounded by stepTimeout. A call
// still running at stallDump fails the test with where it waited: the
// stacks of this process and serve's (which ends: daemontest.Quit), and
// the servers' state, written to the test's artifacts directory.
func (p *page) mcpCall(cs *mcp.ClientSession, name string, args map[string]any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	dumped := make(chan string, 1)
	watch := time.AfterFunc(stallDump, func() { dumped <- p.dumpStall(name) })
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if watch.Stop() {
		if err != nil {
			p.t.Fatalf("calling %s on /mcp: %v", name, err)
		}
		return
	}
	p.t.Fatalf("calling %s on /mcp: still running after %v (then: %v); where both ends waited: %s", name, stallDump, err, <-dumped)
}

// dumpStall writes the stacks of this process and of serve, and the
// servers' views, to files in the artifacts directory, while a call of
// tool waits; it returns their names. serve is quit for its stacks.
func (p *page) dumpStall(tool string) string {
	own := make([]byte, 16<<20)
	own = own[:runtime.Stack(own, true)]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	views, verr := p.api.Servers(ctx)
	cancel()
	state, _ := json.MarshalIndent(views, "", "  ")
	files := map[string][]byte{
		"stall-test-stacks.txt":  own,
		"stall-serve-stacks.txt": []byte(p.d.Quit()),
		"stall-servers.json":     append(state, fmt.Sprintf("\n%v\n", verr)...),
	}
	var names []string
	for name, b := range files {
		path := filepath.Join(p.shots, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			p.t.Logf("writing %s: %v", path, err)
			continue
		}
		names = append(names, path)
	}
	slices.Sort(names)
	var calling []string // this process's goroutines of the call
	for g := range strings.SplitSeq(string(own), "\n\n") {
		if strings.Contains(g, "modelcontextprotocol/go-sdk") || strings.Contains(g, "net/http.(*persistConn)") {
			calling = append(calling, g)
		}
	}
	p.t.Logf("a call of %s waited %v; the test's goroutines of the go-sdk and HTTP:\n%s\nserve's stacks (SIGQUIT):\n%s",
		tool, stallDump, strings.Join(calling, "\n\n"), files["stall-serve-stacks.txt"])
	return strings.Join(names, ", ")
}

// TestAuditViewShowsOtherClientsCalls: calls made through the API and by
// an MCP client on /mcp show in the audit view, newest first, with their
// outcome, surface and principal; the server and outcome filters narrow
// it; a server's row menu and detail view open it filtered to the
// server; with "Follow" on, a new call (and not another server's) shows
// without a reload, and the polls stop when another view is shown.
func TestAuditViewShowsOtherClientsCalls(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("work")
	p.addServer("other")
	p.call("work/add", map[string]any{"a": 1, "b": 2})
	p.call("work/fail", map[string]any{"message": "no"})
	cs := p.mcpClient()
	p.mcpCall(cs, "other__echo", map[string]any{"text": "hello"})
	p.waitAudit(client.AuditFilter{Server: "other", Tool: "echo"}, 1)
	p.waitAudit(client.AuditFilter{Server: "work", Tool: "fail"}, 1)

	p.click(`#nav button[data-view="audit"]`)
	p.waitJS("the entries", `document.querySelector('#audit-body tr[data-kind="tool"][data-server="other"]') !== null`)
	p.shot("audit")
	rows := p.auditRows()
	var tools []auditRow
	for i, r := range rows {
		if i > 0 && r.ID >= rows[i-1].ID {
			t.Errorf("row %d (id %d) under id %d: not newest first", i, r.ID, rows[i-1].ID)
		}
		if r.What == "add" || r.What == "fail" || r.What == "echo" {
			tools = append(tools, r)
		}
	}
	want := []auditRow{
		{Server: "other", What: "echo", Outcome: "ok", Surface: "mcp", Principal: "admin"},
		{Server: "work", What: "fail", Outcome: "tool_error", Surface: "api", Principal: "admin"},
		{Server: "work", What: "add", Outcome: "ok", Surface: "api", Principal: "admin"},
	}
	if len(tools) != len(want) {
		t.Fatalf("the tool calls shown: %+v, want %+v", tools, want)
	}
	for i, w := range want {
		g := tools[i]
		if g.Server != w.Server || g.What != w.What || g.Outcome != w.Outcome || g.Surface != w.Surface || g.Principal != w.Principal {
			t.Errorf("tool call %d reads %+v, want %+v", i, g, w)
		}
		if !strings.HasSuffix(g.Duration, "ms") && !strings.HasSuffix(g.Duration, " s") || !strings.Contains(g.Bytes, " B → ") {
			t.Errorf("tool call %d: duration %q, sizes %q", i, g.Duration, g.Bytes)
		}
	}
	// The page's own changes are entries too: creating the servers.
	var created bool
	for _, r := range rows {
		created = created || r.What == "POST /api/v1/servers" && r.Outcome == "ok"
	}
	if !created {
		t.Errorf("no entry for POST /api/v1/servers among %+v", rows)
	}

	// Filters: the server, then its failures.
	p.fill("#au-server", "work")
	p.click("#au-apply")
	p.waitJS("only work's", `[...document.querySelectorAll("#audit-body tr")].every(tr => tr.dataset.server === "work")`)
	if got := p.auditRows(); len(got) < 2 {
		t.Errorf("filtered to work: %+v", got)
	}
	p.fill("#au-outcome", "tool_error")
	p.click("#au-apply")
	p.waitJS("work's failure alone", `document.querySelectorAll("#audit-body tr").length === 1`)
	if got := p.auditRows(); got[0].What != "fail" || got[0].Outcome != "tool_error" {
		t.Errorf("filtered to work's tool_error: %+v", got)
	}
	p.shot("audit-filtered")

	// From a server's row, and from its detail view: the view filtered to it.
	p.click(`#nav button[data-view="servers"]`)
	p.rowAction("work", "audit")
	p.waitJS("the view filtered to work", `!document.getElementById("view-audit").hidden
		&& document.getElementById("au-server").value === "work" && document.getElementById("au-outcome").value === ""
		&& document.querySelectorAll("#audit-body tr").length >= 2`)
	p.click(`#nav button[data-view="servers"]`)
	p.openServer("other")
	p.click(`#server-detail button[data-action="audit"]`)
	p.waitJS("the view filtered to other", `!document.getElementById("view-audit").hidden
		&& document.getElementById("au-server").value === "other" && document.getElementById("au-outcome").value === ""
		&& document.querySelector("#audit-body tr") !== null
		&& [...document.querySelectorAll("#audit-body tr")].every(tr => tr.dataset.server === "other")`)

	// Follow: a new call by the MCP client shows, the page not reloaded.
	p.do(`window.notReloaded = true`)
	top := p.auditRows()[0].ID
	p.click("#au-follow")
	p.waitJS("following", `document.getElementById("view-audit").dataset.following === "on"`)
	p.mcpCall(cs, "work__add", map[string]any{"a": 1, "b": 1}) // not other's: filtered out while followed
	p.mcpCall(cs, "other__echo", map[string]any{"text": "again"})
	p.waitJS("the new call", fmt.Sprintf(`(+(document.querySelector("#audit-body tr") || {dataset: {}}).dataset.id) > %d`, top))
	if got := p.auditRows()[0]; got.What != "echo" || got.Surface != "mcp" || got.Outcome != "ok" {
		t.Errorf("the followed entry reads %+v", got)
	}
	for _, r := range p.auditRows() {
		if r.Server != "other" {
			t.Errorf("following the view filtered to other shows %+v", r)
		}
	}
	var reloaded bool
	p.eval(`window.notReloaded !== true`, &reloaded)
	if reloaded {
		t.Error("the page was reloaded")
	}
	p.shot("audit-followed")
	p.click(`#nav button[data-view="servers"]`)
	p.waitJS("the polls stopped", `document.getElementById("view-audit").dataset.following === "off"`)
}

// TestAuditViewFitsDesktopAndPhone: the audit view, with entries, fits
// 1280 and 375 px without sideways scrolling; on a phone each entry is a
// block no wider than the screen.
func TestAuditViewFitsDesktopAndPhone(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("a-server-with-a-rather-long-name")
	p.call("a-server-with-a-rather-long-name/echo", map[string]any{"text": strings.Repeat("long ", 40)})
	p.call("a-server-with-a-rather-long-name/fail", map[string]any{"message": "no"})
	p.waitAudit(client.AuditFilter{Tool: "fail"}, 1)
	for _, width := range []int{windowWidth, 375} {
		if width != windowWidth {
			p.narrow()
		}
		p.click(`#nav button[data-view="servers"]`)
		p.click(`#nav button[data-view="audit"]`)
		p.waitJS("the entries", `document.querySelector('#audit-body tr[data-outcome="tool_error"]') !== null`)
		p.layout("audit", width, "audit")
		var widest float64
		p.eval(`Math.max(...[...document.querySelectorAll("#audit-body tr, #audit-form")].map(e => e.getBoundingClientRect().right))`, &widest)
		if widest > float64(width) {
			t.Errorf("at %d px an entry or the filters reach %.0f px", width, widest)
		}
		p.shot(fmt.Sprint("audit-", width))
	}
}

// TestAuditViewKeepsTheNewest500Rows: followed through more calls than it
// keeps, the view holds the newest 500 entries, the newest on top.
func TestAuditViewKeepsTheNewest500Rows(t *testing.T) {
	p := newLoggedInPage(t)
	p.addServer("busy")
	cs := p.mcpClient()
	p.click(`#nav button[data-view="audit"]`)
	p.click("#au-follow")
	p.waitJS("following", `document.getElementById("view-audit").dataset.following === "on"`)
	const calls = 520
	for i := range calls {
		p.mcpCall(cs, "busy__echo", map[string]any{"text": fmt.Sprint(i)})
	}
	p.waitAudit(client.AuditFilter{Server: "busy", Tool: "echo", Limit: calls}, calls)
	es := p.waitAudit(client.AuditFilter{Limit: 500}, 500) // the newest 500 of the whole log
	oldest, newest := es[0].ID, es[len(es)-1].ID
	p.waitJS("the last call on top", fmt.Sprintf(`+document.querySelector("#audit-body tr").dataset.id === %d`, newest))
	var n int
	p.eval(`document.querySelectorAll("#audit-body tr").length`, &n)
	if n != 500 {
		t.Errorf("%d rows after %d calls, want the newest 500", n, calls)
	}
	if got := p.auditRows()[n-1].ID; got != oldest {
		t.Errorf("the bottom row is id %d, want %d (the 500th newest)", got, oldest)
	}
	p.shot("audit-bounded")
}

// TestAuditViewSaysWhenServeKeepsNoLog: with --audit=false the view says
// so, rather than showing an empty log or a bare 404.
func TestAuditViewSaysWhenServeKeepsNoLog(t *testing.T) {
	p := newPageOf(t, daemontest.Options{Args: []string{"--audit=false"}})
	p.login()
	p.click(`#nav button[data-view="audit"]`)
	p.waitJS("the reason", `!document.getElementById("audit-error").hidden`)
	if got := p.text("#audit-error"); !strings.Contains(got, "--audit=false") {
		t.Errorf("the view reads %q", got)
	}
	if !p.textHidden("#audit-empty") {
		t.Error(`the view also says "No entries match."`)
	}
}
