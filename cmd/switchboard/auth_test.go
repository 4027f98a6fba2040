package main

// Who may use a daemon: serve with no flags generates a credential only
// its user can read, another local user is refused on the API and on /mcp,
// the owner's CLI needs no configuration, a credential file others could
// read is refused, and client-config prints client settings that work.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// helperRequests is the environment variable that makes TestHelperRequests
// act: the JSON of the requests to make.
const helperRequests = "SWITCHBOARD_TEST_HELPER_REQUESTS"

// helperRequest is one request TestHelperRequests makes, and helperAnswer
// what came back.
type helperRequest struct {
	Method, URL, Body string
	Header            map[string]string
}

type helperAnswer struct {
	Status      int
	ContentType string
	Body        string
	Err         string
}

// helperMarker starts the line TestHelperRequests prints its answers on.
const helperMarker = "HELPER-ANSWERS "

// TestHelperRequests is not a test of its own: TestServeRefusesOtherUsers
// runs this test binary as another user to make the requests in
// $SWITCHBOARD_TEST_HELPER_REQUESTS, and reads the answers it prints.
func TestHelperRequests(t *testing.T) {
	spec := os.Getenv(helperRequests)
	if spec == "" {
		t.Skip("run by TestServeRefusesOtherUsers as another user")
	}
	var reqs []helperRequest
	if err := json.Unmarshal([]byte(spec), &reqs); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	var answers []helperAnswer
	for _, r := range reqs {
		req, err := http.NewRequest(r.Method, r.URL, strings.NewReader(r.Body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range r.Header {
			req.Header.Set(k, v)
		}
		var a helperAnswer
		if resp, err := hc.Do(req); err != nil {
			a.Err = err.Error()
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a = helperAnswer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: string(b)}
		}
		answers = append(answers, a)
	}
	out, _ := json.Marshal(answers)
	os.Stdout.Write(append([]byte(helperMarker), append(out, '\n')...))
}

// otherUser returns the credential of the user nobody, skipping the test
// unless it runs as root (CI does), which alone may run a process as
// someone else.
func otherUser(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run requests as the user nobody (CI runs the tests as root)")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to make requests as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// publicDir returns a directory in which every user can run what is
// there, removed when the test ends: the go command's, the harness's and
// the test's TempDir are private to their user.
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "switchboard-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// publicCopy copies the executable at src into dir (a publicDir), so that
// another user can run it.
func publicCopy(t *testing.T, dir, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// asUser runs bin with args as cred, in dir, with env (and a PATH and a
// HOME that user has), and returns its stdout and stderr.
func asUser(t *testing.T, cred *syscall.Credential, dir, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s as uid %d: %v", filepath.Base(bin), cred.Uid, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TestServeRefusesOtherUsers: serve started by root with no credential
// flag (what a person does first) refuses the user nobody on the API (a
// draft test that would run /bin/sh as root, the server list) and on the
// MCP endpoints, whether nobody asks directly or through the CLI, even
// when pointed at root's config directory; root's own CLI needs no flag.
func TestServeRefusesOtherUsers(t *testing.T) {
	nobody := otherUser(t)
	d := startServe(t, daemontest.Options{})

	// The owner: the CLI finds the credential by itself.
	r := d.ok(t, "server", "list")
	contains(t, "the owner's server list", r.stdout, "no servers")

	probe := `{"name":"probe","transport":"stdio","command":"/bin/sh","args":["-c","id >&2; exit 1"]}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	mcpHeader := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	reqs := []helperRequest{
		{Method: "POST", URL: d.addr + "/api/v1/test", Body: probe, Header: map[string]string{"Content-Type": "application/json"}},
		{Method: "GET", URL: d.addr + "/api/v1/servers"},
		{Method: "POST", URL: d.addr + "/mcp", Body: initialize, Header: mcpHeader},
		{Method: "POST", URL: d.addr + "/mcp/probe", Body: initialize, Header: mcpHeader},
		{Method: "GET", URL: d.addr + "/healthz"},
	}

	// The probe works, for the owner: what nobody is refused is a command
	// run by this daemon (as its sandbox user: never root).
	c := d.serve.Client(nil)
	defer c.Close()
	res, err := c.TestConfig(context.Background(), &sb.ServerConfig{Name: "probe", Transport: sb.TransportStdio,
		Command: "/bin/sh", Args: []string{"-c", "id >&2; exit 1"}})
	if logs := strings.Join(res.Logs, "\n"); err != nil || !strings.Contains(logs, "uid=") || strings.Contains(logs, "uid=0(") {
		t.Fatalf("the owner's draft test of /bin/sh: %v %+v", err, res)
	}

	dir := publicDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testBin := publicCopy(t, dir, self)
	sbBin := publicCopy(t, dir, daemontest.Binary(t))
	spec, _ := json.Marshal(reqs)
	stdout, stderr, _ := asUser(t, nobody, dir, testBin, []string{helperRequests + "=" + string(spec)}, "-test.run=^TestHelperRequests$", "-test.count=1")
	var answers []helperAnswer
	for l := range strings.Lines(stdout) {
		if j, ok := strings.CutPrefix(l, helperMarker); ok {
			if err := json.Unmarshal([]byte(j), &answers); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(answers) != len(reqs) {
		t.Fatalf("the helper run as nobody answered %d of %d requests:\n%s\n%s", len(answers), len(reqs), stdout, stderr)
	}
	for i, a := range answers {
		what := reqs[i].Method + " " + strings.TrimPrefix(reqs[i].URL, d.addr) + " as nobody"
		want := http.StatusUnauthorized
		if strings.HasSuffix(reqs[i].URL, "/healthz") {
			want = http.StatusOK
		}
		if a.Status != want || strings.Contains(a.Body, "uid=") {
			t.Errorf("%s: %d %s %.300s, want %d", what, a.Status, a.Err, a.Body, want)
		}
		if want == http.StatusUnauthorized && a.ContentType != "application/json" {
			t.Errorf("%s: the refusal is %q, want application/json", what, a.ContentType)
		}
	}

	// nobody's CLI: no credential of its own, and root's is out of reach
	// even when nobody names root's config directory.
	env := []string{"SWITCHBOARD_ADDR=" + d.addr}
	if _, stderr, code := asUser(t, nobody, dir, sbBin, env, "server", "list"); code == 0 || !strings.Contains(stderr, "HTTP 401") {
		t.Errorf("switchboard server list as nobody: exit %d, stderr %s; want a 401", code, stderr)
	}
	if _, stderr, code := asUser(t, nobody, dir, sbBin, append(env, "XDG_CONFIG_HOME="+d.configDir), "server", "list"); code == 0 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("switchboard server list as nobody, with root's config directory: exit %d, stderr %s; want permission denied", code, stderr)
	}
}

// serveOnce runs "switchboard serve" with args and env (in the harness's
// environment) and returns its exit status and what it wrote, for a serve
// that must refuse to start; one that starts anyway is stopped after 10 s
// and reported.
func serveOnce(t *testing.T, env []string, args ...string) (code int, output string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, daemontest.Binary(t), append([]string{"serve", "--db", "sqlite:" + filepath.Join(t.TempDir(), "sb.db")}, args...)...)
	cmd.Env = daemontest.Environ(env...)
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("serve %s did not exit: it started\n%s", strings.Join(args, " "), out)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestCredentialFileIsPrivateAndReused: under umask 022, the credential
// serve generates is a file of mode 0600 in a directory of mode 0700; a
// restart uses the same one; a file or directory other users could read,
// or that another user owns, is refused by serve and by the CLI, with a
// message that says why and what to do.
func TestCredentialFileIsPrivateAndReused(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	config := filepath.Join(t.TempDir(), "config")
	dir := filepath.Join(config, "switchboard")
	file := filepath.Join(dir, "token")

	d := startServe(t, daemontest.Options{ConfigDir: config})
	for path, want := range map[string]os.FileMode{dir: 0o700, file: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, want mode %#o", path, err, want)
		}
	}
	if _, err := d.serve.WaitLog(context.Background(), "file="+file); err != nil {
		t.Errorf("serve does not say where the credential is: %v", err)
	}
	first := d.serve.Token
	d.stop(t)
	d = startServe(t, daemontest.Options{ConfigDir: config})
	if d.serve.Token != first {
		t.Errorf("a restart made a new credential")
	}
	if r := d.ok(t, "server", "list"); !strings.Contains(r.stdout, "no servers") {
		t.Errorf("the owner's CLI: %s", r)
	}

	env := []string{"XDG_CONFIG_HOME=" + config}
	for _, tc := range []struct {
		name    string
		spoil   func() error
		restore func() error
		want    []string
	}{
		{"world-readable file", func() error { return os.Chmod(file, 0o644) }, func() error { return os.Chmod(file, 0o600) },
			[]string{file, "mode 0644", "chmod 600 " + file, "refusing"}},
		{"group-readable directory", func() error { return os.Chmod(dir, 0o750) }, func() error { return os.Chmod(dir, 0o700) },
			[]string{dir, "mode 0750", "chmod 700 " + dir}},
		{"file of another user", func() error {
			if os.Geteuid() != 0 {
				return errors.ErrUnsupported
			}
			return os.Chown(file, 65534, 65534)
		}, func() error { return os.Chown(file, 0, 0) },
			[]string{file, "belongs to uid 65534"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spoil(); errors.Is(err, errors.ErrUnsupported) {
				t.Skip("needs root, to give the file to another user")
			} else if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := tc.restore(); err != nil {
					t.Fatal(err)
				}
			}()
			code, out := serveOnce(t, env, "--listen", "127.0.0.1:0")
			if code == 0 {
				t.Errorf("serve with a %s exited 0:\n%s", tc.name, out)
			}
			contains(t, "serve's error", out, tc.want...)
			// The CLI too: it says so rather than send nothing and get a 401.
			r := d.run(t, nil, "", "server", "list")
			if r.code == 0 {
				t.Errorf("the CLI used a %s: %s", tc.name, r)
			}
			contains(t, "the CLI's error", r.stderr, tc.want...)
		})
	}
}

// TestServeRefusesToServeWithoutACredential: with no credential (no
// --token, and no config directory to keep one in), serve refuses to
// start, on a non-loopback listener as on loopback, before it listens,
// and says which flag would let it; the flag and a token contradict.
func TestServeRefusesToServeWithoutACredential(t *testing.T) {
	noHome := []string{"HOME=", "XDG_CONFIG_HOME="}
	for _, listen := range []string{"0.0.0.0:0", "127.0.0.1:0"} {
		code, out := serveOnce(t, noHome, "--listen", listen)
		if code == 0 || !strings.Contains(out, "--insecure-no-auth") || !strings.Contains(out, "--token") {
			t.Errorf("serve --listen %s without a credential: exit %d, want non-zero naming --insecure-no-auth and --token:\n%s", listen, code, out)
		}
		if strings.Contains(out, "switchboard serving") {
			t.Errorf("serve --listen %s without a credential served:\n%s", listen, out)
		}
	}
	code, out := serveOnce(t, []string{"SWITCHBOARD_TOKEN=tok-123"}, "--listen", "127.0.0.1:0", "--insecure-no-auth")
	if code == 0 || !strings.Contains(out, "contradicts") || strings.Contains(out, "tok-123") {
		t.Errorf("serve --insecure-no-auth with SWITCHBOARD_TOKEN: exit %d:\n%s", code, out)
	}
	code, out = serveOnce(t, nil, "--listen", "127.0.0.1:0", "--allowed-host", "https://example.com")
	if code == 0 || !strings.Contains(out, "--allowed-host") {
		t.Errorf("serve --allowed-host with a URL: exit %d:\n%s", code, out)
	}
}

// clientSnippet is what client-config prints for an HTTP client.
type clientSnippet struct {
	Inputs []struct {
		Type, ID string
		Password bool
	} `json:"inputs"`
	Servers, MCPServers map[string]struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
}

// TestClientConfig: the snippet printed for each client is JSON of the
// shape that client reads, with the daemon's MCP URL and a reference to
// its credential, never the credential itself unless --embed-token asks
// (VS Code's password input, Cursor's ${env:...}, Claude Code's ${...});
// and it works: an MCP client given that URL and header, with the
// reference resolved as the client resolves it, connects. --write writes
// a new file of mode 0600. Claude Desktop gets "switchboard stdio" by
// absolute paths, its database in the entry's env, not in its argv.
func TestClientConfig(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	url, auth := d.addr+"/mcp", "Bearer "+d.serve.Token
	for _, tc := range []struct {
		client, servers, typ, ref string
	}{
		{"vscode", "servers", "http", "${input:switchboard-token}"},
		{"cursor", "mcpServers", "", "${env:SWITCHBOARD_TOKEN}"},
		{"claude-code", "mcpServers", "http", "${SWITCHBOARD_TOKEN}"},
	} {
		t.Run(tc.client, func(t *testing.T) {
			for _, embed := range []bool{false, true} {
				args := []string{"client-config", tc.client}
				want := "Bearer " + tc.ref
				if embed {
					args, want = append(args, "--embed-token"), auth
				}
				r := d.ok(t, args...)
				if !embed && strings.Contains(r.stdout, d.serve.Token) {
					t.Fatalf("client-config %s holds the daemon's credential: %s", tc.client, r.stdout)
				}
				var cfg clientSnippet
				if err := json.Unmarshal([]byte(r.stdout), &cfg); err != nil {
					t.Fatalf("client-config %s is not JSON: %v\n%s", tc.client, err, r.stdout)
				}
				servers := cfg.MCPServers
				if tc.servers == "servers" {
					servers = cfg.Servers
				}
				s, ok := servers["switchboard"]
				if !ok || s.URL != url || s.Headers["Authorization"] != want || s.Type != tc.typ {
					t.Fatalf("%s: %s; want %s.switchboard with url %s, type %q and Authorization %q", strings.Join(args, " "), r.stdout, tc.servers, url, tc.typ, want)
				}
				if tc.client == "vscode" && !embed && (len(cfg.Inputs) != 1 || cfg.Inputs[0].ID != "switchboard-token" || cfg.Inputs[0].Type != "promptString" || !cfg.Inputs[0].Password) {
					t.Fatalf("client-config vscode: the input is missing or not a password: %s", r.stdout)
				}
				resolved := strings.ReplaceAll(s.Headers["Authorization"], tc.ref, d.serve.Token)
				hc := &http.Client{Transport: headerTransport{"Authorization", resolved}}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: tc.client}, nil).Connect(context.Background(),
					&mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, nil)
				if err != nil {
					t.Fatalf("connecting as the %s snippet says: %v", tc.client, err)
				}
				cs.Close()
				hc.CloseIdleConnections()
			}
		})
	}

	// --write: a new file, 0600, whatever the umask, in a directory made
	// if missing (.vscode in a fresh project); an existing one is left
	// alone.
	file := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	r := d.ok(t, "client-config", "vscode", "--embed-token", "--write", file)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("--write: %v, mode %v, want 0600", err, fi)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), auth) || r.stdout != "" {
		t.Errorf("--write wrote %q, printed %q", b, r.stdout)
	}
	d.fail(t, []string{"exists"}, "client-config", "vscode", "--write", file)

	// A bare HOST:PORT is a URL like any other.
	bare := strings.TrimPrefix(d.addr, "http://")
	if r := d.ok(t, "client-config", "cursor", "--addr", bare); !strings.Contains(r.stdout, `"`+url+`"`) {
		t.Errorf("client-config --addr %s: %s", bare, r)
	}

	// A daemon elsewhere gets no local credential; a token given is
	// referred to as well, and embedded only when asked.
	r = d.ok(t, "client-config", "cursor", "--addr", "http://192.0.2.7:7420")
	if strings.Contains(r.stdout, d.serve.Token) || !strings.Contains(r.stdout, "http://192.0.2.7:7420/mcp") || !strings.Contains(r.stderr, "no credential") {
		t.Errorf("client-config for another host: %s", r)
	}
	r = d.ok(t, "client-config", "cursor", "--addr", "http://192.0.2.7:7420", "--token", "remote-tok")
	if strings.Contains(r.stdout, "remote-tok") || !strings.Contains(r.stdout, "${env:SWITCHBOARD_TOKEN}") {
		t.Errorf("client-config --token: %s", r)
	}
	r = d.ok(t, "client-config", "cursor", "--addr", "http://192.0.2.7:7420", "--token", "remote-tok", "--embed-token")
	if !strings.Contains(r.stdout, `"Bearer remote-tok"`) {
		t.Errorf("client-config --token --embed-token: %s", r)
	}

	// Claude Desktop: the stdio command, by absolute paths, the database
	// in its env; a database that does not exist is refused, naming the
	// file (switchboard stdio would create it empty: no tools, no error).
	dir := t.TempDir()
	missing := d.runIn(t, dir, "client-config", "claude", "--db", "sqlite:rel.db")
	if want := "the database " + filepath.Join(dir, "rel.db") + " does not exist"; missing.code == 0 || !strings.Contains(missing.stderr, want) {
		t.Errorf("client-config claude on a missing database: %s; want a failure saying %q", missing, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "rel.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = d.runIn(t, dir, "client-config", "claude", "--db", "sqlite:rel.db")
	if r.code != 0 {
		t.Fatalf("client-config claude: %s", r)
	}
	var claude struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &claude); err != nil {
		t.Fatalf("client-config claude is not JSON: %v\n%s", err, r.stdout)
	}
	s := claude.MCPServers["switchboard"]
	if db := s.Env["SWITCHBOARD_DB"]; s.Command != daemontest.Binary(t) || !slices.Equal(s.Args, []string{"stdio"}) ||
		!strings.HasPrefix(db, "sqlite:/") || !strings.HasSuffix(db, "/rel.db") || strings.Contains(r.stdout, d.serve.Token) {
		t.Errorf("client-config claude: %s", r.stdout)
	}
	contains(t, "client-config claude's note", r.stderr, "Claude Desktop")

	// No client, or one it does not know: the list of clients.
	for _, args := range [][]string{{"client-config"}, {"client-config", "emacs"}} {
		d.fail(t, []string{"claude       Claude Desktop", "claude-code  Claude Code", "cursor ", "vscode "}, args...)
	}
}

// headerTransport sets one header on every request.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}
