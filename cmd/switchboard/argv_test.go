package main

// The secrets the CLI hands a browser (web's one-time login code, server
// auth's state) are tested against the attack that found them: another
// uid reading every process's command line while the browser opens. A
// server's secret env can be given to the CLI off its command line too.

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// otherUID is the attacker: nobody, another uid than the test's (root).
const otherUID = "65534"

// fakeOpener is the desktop's xdg-open for the tests: it records its
// arguments, what uid 65534 sees of every command line while it runs
// (and whether that uid can read the file it was given), the page it
// was given with its mode and its directory's, and then a "done" marker.
const fakeOpener = `#!/bin/sh
printf '%s\n' "$@" > "$OUT/argv"
setpriv --reuid=` + otherUID + ` --regid=` + otherUID + ` --clear-groups sh -c '
for f in /proc/[0-9]*/cmdline; do tr "\000" " " < "$f" 2>/dev/null; echo; done
cat "$1"' attacker "$1" > "$OUT/attacker" 2> "$OUT/attacker.err"
stat -c %a "$1" "$(dirname "$1")" > "$OUT/modes"
cat "$1" > "$OUT/page"
echo done > "$OUT/done"
`

// browserFixture is a directory with the fake xdg-open and where it
// records, readable by uid 65534 (a test's TempDir is not), and the env
// that makes the CLI use it.
type browserFixture struct {
	out string
	env []string
}

func newBrowserFixture(t *testing.T) *browserFixture {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv, to run the attacker as another uid")
	}
	dir, err := os.MkdirTemp("", "sb-browser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, out := filepath.Join(dir, "bin"), filepath.Join(dir, "out")
	for _, d := range []string{bin, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(fakeOpener), 0o755); err != nil {
		t.Fatal(err)
	}
	return &browserFixture{out: out, env: []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "DISPLAY=:99", "WAYLAND_DISPLAY=", "XDG_RUNTIME_DIR=", "OUT=" + out}}
}

func (b *browserFixture) read(t *testing.T, name string) string {
	t.Helper()
	s, err := os.ReadFile(filepath.Join(b.out, name))
	if err != nil {
		t.Fatalf("the browser did not record its %s: %v", name, err)
	}
	return string(s)
}

// waitOpened waits until the fake opener has recorded everything (an
// opener started by an older CLI may still be running when it returns).
func (b *browserFixture) waitOpened(t *testing.T) {
	t.Helper()
	for range 600 {
		if _, err := os.Stat(filepath.Join(b.out, "done")); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the browser was not opened")
}

// pageTarget is the URL the redirect page sends the browser to.
var pageTarget = regexp.MustCompile(`window\.location\.replace\("([^"]*)"\)`)

// check asserts what the attacker saw and what the browser got: a page
// of its own (0600 in a 0700 directory, which the attacker cannot read)
// sending it to want, and no command line holding secret. It returns the
// path the opener was given.
func (b *browserFixture) check(t *testing.T, want, secret string) string {
	t.Helper()
	argv := strings.TrimSpace(b.read(t, "argv"))
	seen := b.read(t, "attacker")
	if !strings.Contains(seen, "xdg-open") || !strings.Contains(seen, "switchboard") {
		t.Fatalf("the attacker did not see the processes' command lines:\n%s", seen)
	}
	if strings.Contains(seen, secret) || strings.Contains(argv, secret) {
		t.Errorf("uid %s read the secret %q in a command line; the opener got %q", otherUID, secret, argv)
	}
	if e := b.read(t, "attacker.err"); !strings.Contains(e, "Permission denied") {
		t.Errorf("the attacker's cat of the page: %q, want Permission denied", e)
	}
	if m := strings.Fields(b.read(t, "modes")); len(m) != 2 || m[0] != "600" || m[1] != "700" {
		t.Errorf("page and directory modes %v, want 600 700", m)
	}
	m := pageTarget.FindStringSubmatch(b.read(t, "page"))
	if m == nil {
		t.Fatalf("the opener was not given a redirect page but %q:\n%s", argv, b.read(t, "page"))
	}
	if got := strings.ReplaceAll(m[1], `\u0026`, "&"); got != want {
		t.Errorf("the page sends the browser to %q, want %q", got, want)
	}
	return argv
}

// TestWebOpensTheBrowserWithoutTheCodeInArgv: "switchboard web" gives
// the browser the login link in a private file, never on a command line,
// so another uid polling /proc/*/cmdline never sees the code; the page
// logs the browser in, and is gone when web returns.
func TestWebOpensTheBrowserWithoutTheCodeInArgv(t *testing.T) {
	b := newBrowserFixture(t)
	d := startServe(t, daemontest.Options{})
	r := d.run(t, b.env, "", "web")
	if r.code != 0 {
		t.Fatalf("web: %s", r)
	}
	link := strings.TrimSpace(r.stdout)
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("code") == "" {
		t.Fatalf("web printed %q", link)
	}
	b.waitOpened(t)
	page := b.check(t, link, u.Query().Get("code"))
	if _, err := os.Stat(filepath.Dir(page)); !os.IsNotExist(err) {
		t.Errorf("the page's directory is still there after web returned: %v", err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the page's link answered %d, want 303 (logged in)", resp.StatusCode)
	}
}

// TestServerAuthOpenKeepsTheStateOutOfArgv: "server auth --open" gives
// the browser the authorization URL in a private file: another uid
// polling /proc/*/cmdline never sees its state, and the page's URL
// completes the authorization.
func TestServerAuthOpenKeepsTheStateOutOfArgv(t *testing.T) {
	b := newBrowserFixture(t)
	as := oauthtest.New(t)
	d := startServe(t, daemontest.Options{})
	if r := d.run(t, nil, "", "server", "add", "gh", "--url", as.URL+"/mcp", "--transport", "streamable-http", "--oauth"); r.code != 0 {
		t.Fatalf("server add --oauth: %s", r)
	}
	waitServer(t, d.serve.Client(nil), "gh", "phase auth", authRequired)

	cmd := exec.Command(daemontest.Binary(t), "server", "auth", "gh", "--open")
	cmd.Env = daemontest.Environ(append([]string{"SWITCHBOARD_ADDR=" + d.addr, "XDG_CONFIG_HOME=" + d.configDir}, b.env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), as.URL+"/authorize?") {
		t.Fatalf("server auth printed %q first (stderr %q), want the authorization URL", lines.Text(), stderr.String())
	}
	authURL := lines.Text()
	u, _ := url.Parse(authURL)
	state := u.Query().Get("state")
	if state == "" {
		t.Fatalf("no state in %s", authURL)
	}
	b.waitOpened(t)
	b.check(t, authURL, state)
	if page := browse(t, authURL); !strings.Contains(page, "gh is authorized") {
		t.Fatalf("callback page: %s", page)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "gh is authorized") {
		t.Fatalf("server auth: %v, stdout %q, stderr %q", err, rest, stderr.String())
	}
}

// TestServerAddEnvFromTheEnvironment: "server add --env K" takes K's
// value from the CLI's own environment, so the secret is not on its
// command line, and the server gets it; a K that is not set is refused.
func TestServerAddEnvFromTheEnvironment(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	out := filepath.Join(t.TempDir(), "api-key")
	script := `printf %s "$API_KEY" > ` + out + `; exec ` + testserver.Binary(t)
	r := d.run(t, []string{"API_KEY=" + secret}, "", "server", "add", "envsrv", "--no-sandbox", "--command", "/bin/sh",
		"--arg", "-c", "--arg", script, "--env", "API_KEY", "--wait")
	if r.code != 0 {
		t.Fatalf("server add --env API_KEY: %s", r)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != secret {
		t.Fatalf("the server got API_KEY %q (%v), want the CLI's %q", b, err, secret)
	}
	d.fail(t, []string{"--env NOT_SET_ANYWHERE: NOT_SET_ANYWHERE is not set"}, "server", "add", "other", "--command", "/bin/true", "--env", "NOT_SET_ANYWHERE")
}
