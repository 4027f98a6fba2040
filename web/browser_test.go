package web_test

// The harness of the page's tests: a real "switchboard serve"
// (internal/daemontest) and Debian's chromium, headless, driven with
// chromedp. Every wait is bounded; every process is stopped by the test
// that started it; a screenshot of each step is saved under
// $SWITCHBOARD_ARTIFACTS/web/TEST (else the test's TempDir, kept only
// while it runs: set the variable to look at them).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// Environment of the tests: the browser, and where screenshots go.
const (
	envChromium  = "SWITCHBOARD_CHROMIUM"
	envArtifacts = "SWITCHBOARD_ARTIFACTS"
)

// Bounds of the waits: one step of the page, and the browser's start.
const (
	stepTimeout  = 20 * time.Second
	startTimeout = 30 * time.Second
)

// Window size of the browser, fixed so that screenshots compare.
const (
	windowWidth  = 1280
	windowHeight = 900
)

func TestMain(m *testing.M) {
	code := m.Run()
	daemontest.RemoveBinary()
	testserver.RemoveBinary()
	os.Exit(code)
}

// chromium returns the browser to drive: $SWITCHBOARD_CHROMIUM (which
// scripts/web-setup.sh exports), else chromium on PATH. Without one the
// test is skipped on a developer's machine and fails in CI.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv(envChromium)
	if path == "" {
		path, _ = exec.LookPath("chromium")
	}
	if path == "" {
		msg := "no chromium: run `source scripts/web-setup.sh` (installs Debian's chromium) or set " + envChromium
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// page is one daemon and one browser tab on it.
type page struct {
	t      *testing.T
	d      *daemontest.Daemon
	api    *client.Client // with the daemon's credential, for setup
	ctx    context.Context
	shots  string
	nshots int
}

// newPage starts serve and chromium, not logged in.
func newPage(t *testing.T) *page {
	t.Helper()
	return newPageOf(t, daemontest.Options{})
}

// newPageOf is newPage with serve started as o says.
func newPageOf(t *testing.T, o daemontest.Options) *page {
	t.Helper()
	bin := chromium(t)
	d := daemontest.Start(t, o)
	p := &page{t: t, d: d, api: d.Client(nil), shots: artifactsDir(t)}
	t.Cleanup(p.api.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(windowWidth, windowHeight),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-gpu", true),
		// A process group of its own, so that the cleanup reaches every
		// process chromium starts; and none outlives a crashed test.
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses root otherwise
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	// The first action starts the browser, which lives as long as ctx: no
	// timeout on it (it would stop the browser), a timer instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	var err error
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		err = fmt.Errorf("not started within %v", startTimeout)
	}
	if err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", bin, err)
	}
	pid := 0
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		pid = c.Browser.Process().Pid
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.shot("failed")
		}
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { chromedp.Cancel(ctx); close(done) }()
		select {
		case <-done:
		case <-closeCtx.Done():
		}
		cancelTab()
		cancelAlloc()
		if pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // whatever is left of the group
		}
	})
	p.ctx = ctx
	return p
}

// artifactsDir is where the test's screenshots go.
func artifactsDir(t *testing.T) string {
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "web", t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs actions, bounded by stepTimeout.
func (p *page) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) and returns
// its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value, as JSON, into out.
func (p *page) eval(expr string, out any) {
	p.t.Helper()
	s := eval[string](p, "Promise.resolve("+expr+").then(v => JSON.stringify(v === undefined ? null : v))")
	if err := json.Unmarshal([]byte(s), out); err != nil {
		p.t.Fatalf("evaluating %s: decoding %q: %v", expr, s, err)
	}
}

// do evaluates a JavaScript statement for its effect.
func (p *page) do(js string) {
	p.t.Helper()
	eval[bool](p, "(() => { "+js+"; return true })()")
}

// waitJS waits until the JavaScript expression is true, for up to
// stepTimeout (or limit, if given).
func (p *page) waitJS(what, expr string, limit ...time.Duration) {
	p.t.Helper()
	d := stepTimeout
	if len(limit) > 0 {
		d = limit[0]
	}
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			cancel()
			p.t.Fatalf("waiting %v for %s (%s): last error %v; the page reads:\n%s", d, what, expr, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text returns the text of the first element matching the CSS selector.
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// shot saves a screenshot of the whole page as NN-name.png.
func (p *page) shot(name string) {
	p.nshots++
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(p.shots, fmt.Sprintf("%02d-%s.png", p.nshots, name))
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
	}
}

// loginLink runs "switchboard web --no-open" as the daemon's user would
// (its config directory, so the CLI finds the credential itself) and
// returns the link it prints.
func (p *page) loginLink() string {
	p.t.Helper()
	cmd := daemontest.Command(p.t, "web", "--no-open", "--addr", p.d.URL)
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+p.d.ConfigDir)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		if cmd.Process != nil && ctx.Err() == context.DeadlineExceeded {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("switchboard web: %v", err)
	}
	link := strings.TrimSpace(string(out))
	if !strings.HasPrefix(link, p.d.URL+"/ui/login?code=") {
		p.t.Fatalf("switchboard web printed %q", link)
	}
	return link
}

// login opens a fresh login link and waits for the logged-in page.
func (p *page) login() {
	p.t.Helper()
	p.run("opening the login link", chromedp.Navigate(p.loginLink()))
	p.waitJS("the logged-in page", `document.body.dataset.state === "app"`)
}

// newLoggedInPage is newPage, logged in.
func newLoggedInPage(t *testing.T) *page {
	t.Helper()
	p := newPage(t)
	p.login()
	return p
}

// narrow emulates a phone's screen, 375 px wide.
func (p *page) narrow() {
	p.t.Helper()
	p.run("emulating 375 px", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2)))
}

// click clicks the element the CSS selector matches, once it is visible.
func (p *page) click(sel string) {
	p.t.Helper()
	// The page may render the node anew between chromedp's query and its
	// click (a list refreshed by an event): the protocol then answers
	// that the node it found is gone (-32000), and the click is tried
	// again on the node the selector finds now.
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
		cancel()
		var cerr *cdproto.Error
		if !errors.As(err, &cerr) || cerr.Code != -32000 {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// fill replaces the value of an input with s, as typing would.
func (p *page) fill(sel, s string) {
	p.t.Helper()
	p.run("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	p.do(fmt.Sprintf(`document.querySelector(%q).value = ""`, sel))
	p.run("typing into "+sel, chromedp.SendKeys(chromedp.CSS(sel), s))
}
