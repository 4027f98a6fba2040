package httpapi_test

// What the web page needs of the API: field errors beside their fields,
// the import route, the page mounted outside the credential, and the
// second way in (Options.Authenticate) that its session uses.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// TestInvalidConfigNamesEachField: a config refused by validation is
// answered with the code invalid_config and, in "fields", every bad field
// with its message, so that a form can show each beside its field.
func TestInvalidConfigNamesEachField(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	var eb api.ErrorBody
	st, body := e.do("POST", "/api/v1/servers", map[string]any{
		"name": "Bad_Name", "transport": "stdio", "command": "x", "call_timeout_ms": -1,
		"retry": map[string]any{"delays_ms": []int{1000, -5}},
	}, &eb)
	if st != http.StatusBadRequest || eb.Error.Code != sb.CodeInvalidConfig {
		t.Fatalf("create: %d %s", st, body)
	}
	got := map[string]string{}
	for _, f := range eb.Error.Fields {
		got[f.Field] = f.Message
	}
	for field, want := range map[string]string{"name": "must be lowercase letters", "call_timeout_ms": "must not be negative", "retry.delays_ms[1]": "must be between"} {
		if !strings.Contains(got[field], want) {
			t.Errorf("field %s: %q, want it to say %q (all: %s)", field, got[field], want, body)
		}
	}
	// Other errors carry no fields.
	if st, body := e.do("GET", "/api/v1/servers/nope", nil, nil); st != 404 || strings.Contains(body, `"fields"`) {
		t.Errorf("not found: %d %s", st, body)
	}
}

// TestImportRouteCreatesWhatItPreviewed: a dry run lists what would be
// created and creates nothing; the real import creates those servers,
// skips names taken and entries the importer cannot use, and says why.
func TestImportRouteCreatesWhatItPreviewed(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	if st, body := e.do("POST", "/api/v1/servers", map[string]any{"name": "taken", "transport": "stdio", "command": "x", "enabled": false}, nil); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	cfg := `{
		// Claude Desktop
		"mcpServers": {
			"My Files": {"command": "/nonexistent/files", "args": ["-v"], "env": {"K": "v"}},
			"taken": {"command": "x"},
			"web": {"url": "https://mcp.example.com/mcp"},
			"prompted": {"command": "x", "env": {"K": "${input:key}"}},
		}
	}`
	var rep api.ImportReport
	if st, body := e.do("POST", "/api/v1/import", api.ImportRequest{Config: cfg, DryRun: true, Disabled: true}, &rep); st != 200 {
		t.Fatalf("dry run: %d %s", st, body)
	}
	if !rep.DryRun || strings.Join(rep.Imported, ",") != "my-files,web" || rep.Renamed["my-files"] != "My Files" {
		t.Fatalf("dry run: %+v", rep)
	}
	skipped := map[string]string{}
	for _, s := range rep.Skipped {
		skipped[s.Name] = s.Reason
	}
	if skipped["taken"] != api.ReasonExists || !strings.Contains(skipped["prompted"], "input") {
		t.Fatalf("dry run skipped: %+v", rep.Skipped)
	}
	if list, _ := e.c.Servers(context.Background()); len(list) != 1 {
		t.Fatalf("a dry run created servers: %d", len(list))
	}

	rep = api.ImportReport{}
	if st, body := e.do("POST", "/api/v1/import", api.ImportRequest{Config: cfg, Disabled: true}, &rep); st != 200 {
		t.Fatalf("import: %d %s", st, body)
	}
	if rep.DryRun || strings.Join(rep.Imported, ",") != "my-files,web" || len(rep.Failed) != 0 {
		t.Fatalf("import: %+v", rep)
	}
	v, err := e.c.Server(context.Background(), "my-files")
	if err != nil || v.IsEnabled() || v.Command != "/nonexistent/files" || v.Env["K"] != sb.SecretMask {
		t.Fatalf("imported server: %+v, %v", v, err)
	}

	var eb api.ErrorBody
	if st, _ := e.do("POST", "/api/v1/import", api.ImportRequest{Config: `{"nothing": {}}`}, &eb); st != 400 || eb.Error.Code != sb.CodeBadRequest {
		t.Fatalf("unknown format: %d %+v", st, eb)
	}
}

// pageEnv serves the API with a stand-in page and session check.
type pageEnv struct {
	url, token string
}

func newPageEnv(t *testing.T, authenticate func(*http.Request) bool) *pageEnv {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registrytest.New(t, &registry.Options{Logger: log})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "page "+r.Method+" "+r.URL.Path)
	})
	token := "tok-" + randomHex(16)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: executor.New(executor.NewMCP(reg)),
		Token: token, Logger: log, Page: page, Authenticate: authenticate}))
	t.Cleanup(srv.Close)
	return &pageEnv{url: srv.URL, token: token}
}

func (e *pageEnv) do(t *testing.T, method, path string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPageIsServedWithoutTheCredentialAndItsLoginCodesWithIt: the page
// (GET /, /ui/...) needs no token, since a browser has none until it logs
// in; the route that mints login codes needs the token itself, and
// nothing but / and /ui/ reaches the page without it.
func TestPageIsServedWithoutTheCredentialAndItsLoginCodesWithIt(t *testing.T) {
	e := newPageEnv(t, nil)
	for _, tc := range []struct {
		method, path string
		auth         bool
		status       int
		body         string
	}{
		{"GET", "/", false, 200, "page GET /"},
		{"GET", "/ui/app.js", false, 200, "page GET /ui/app.js"},
		{"POST", "/ui/logout", false, 200, "page POST /ui/logout"},
		{"POST", "/api/v1/login-codes", false, 401, "unauthorized"},
		{"POST", "/api/v1/login-codes", true, 200, "page POST /api/v1/login-codes"},
		{"POST", "/", false, 401, "unauthorized"},
		{"GET", "/index.html", false, 401, "unauthorized"},
		{"GET", "/api/v1/servers", false, 401, "unauthorized"},
	} {
		var hdr []string
		if tc.auth {
			hdr = []string{"Authorization", "Bearer " + e.token}
		}
		if st, body := e.do(t, tc.method, tc.path, hdr...); st != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s (token %v): %d %q, want %d %q", tc.method, tc.path, tc.auth, st, body, tc.status, tc.body)
		}
	}
	// The page is still behind the Host and cross-origin rules.
	if st, body := e.do(t, "GET", "/", "Host", "evil.example"); st != 403 || !strings.Contains(body, "forbidden_host") {
		t.Errorf("GET / under a foreign Host: %d %s", st, body)
	}
	if st, body := e.do(t, "POST", "/ui/logout", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); st != 403 || !strings.Contains(body, "forbidden_origin") {
		t.Errorf("cross-site POST /ui/logout: %d %s", st, body)
	}
}

// TestAuthenticateLetsApprovedRequestsIn: a request without the token
// that Options.Authenticate approves is served; one it refuses gets the
// same 401 as one without any credential.
func TestAuthenticateLetsApprovedRequestsIn(t *testing.T) {
	e := newPageEnv(t, func(r *http.Request) bool { return r.Header.Get("X-Test-Session") == "yes" })
	if st, body := e.do(t, "GET", "/api/v1/servers", "X-Test-Session", "yes"); st != 200 || !strings.Contains(body, `"servers"`) {
		t.Errorf("approved: %d %s", st, body)
	}
	if st, body := e.do(t, "GET", "/api/v1/servers", "X-Test-Session", "no"); st != 401 || !strings.Contains(body, "unauthorized") {
		t.Errorf("refused: %d %s", st, body)
	}
	if st, body := e.do(t, "GET", "/api/v1/servers", "Authorization", "Bearer "+e.token); st != 200 {
		t.Errorf("the token still works: %d %s", st, body)
	}
}
