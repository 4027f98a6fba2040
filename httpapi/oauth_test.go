package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestOAuthRoutes: start, callback (no credential: the state is one),
// status and forget, and their refusals.
func TestOAuthRoutes(t *testing.T) {
	as := oauthtest.New(t)
	store := sqlitetest.Store(t)
	o := &oauthclient.Client{Store: store, Key: oauthtest.Key(t)}
	tokens, err := registry.NewTokens(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpToken, _, err := tokens.Create(context.Background(), "agent", []sb.Scope{sb.ScopeMCP})
	if err != nil {
		t.Fatal(err)
	}
	toolsetToken, _, err := tokens.Create(context.Background(), "narrow", []sb.Scope{"toolset:x"})
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New(t, &registry.Options{Session: upstream.Options{OAuth: o}},
		&sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}},
		&sb.ServerConfig{Name: "plain", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp"})
	const token = "api-token-0123456789"
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: executor.New(executor.NewMCP(reg)),
		Token: token, Tokens: tokens, OAuth: o}))
	t.Cleanup(srv.Close)
	doAs := func(method, path, bearer string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	do := func(method, path string, bearer bool) (int, string) {
		if bearer {
			return doAs(method, path, token)
		}
		return doAs(method, path, "")
	}

	for _, tc := range []struct {
		method, path string
		bearer       bool
		status       int
		want         string
	}{
		{"POST", "/api/v1/servers/oauthed/oauth/start", false, 401, "unauthorized"},
		{"GET", "/api/v1/servers/oauthed/oauth", false, 401, "unauthorized"},
		{"DELETE", "/api/v1/servers/oauthed/oauth", false, 401, "unauthorized"},
		{"POST", "/api/v1/servers/nope/oauth/start", true, 404, "not_found"},
		{"POST", "/api/v1/servers/plain/oauth/start", true, 400, `no \"oauth\" block`},
		{"GET", "/api/v1/servers/oauthed/oauth/callback?state=forged&code=x", false, 400, "Authorization failed"},
		// The old routes are gone.
		{"POST", "/api/v1/servers/oauthed/auth", true, 404, "not_found"},
		{"GET", "/api/v1/oauth/callback?state=forged&code=x", false, 401, "unauthorized"},
	} {
		if status, body := do(tc.method, tc.path, tc.bearer); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
	// Start, status and forget need the admin scope.
	for _, bearer := range []string{mcpToken, toolsetToken} {
		for _, r := range [][2]string{{"POST", "/api/v1/servers/oauthed/oauth/start"}, {"GET", "/api/v1/servers/oauthed/oauth"},
			{"DELETE", "/api/v1/servers/oauthed/oauth"}} {
			if status, body := doAs(r[0], r[1], bearer); status != 403 || !strings.Contains(body, "forbidden") {
				t.Errorf("%s %s with a token of scope mcp or toolset:x: %d %s; want 403", r[0], r[1], status, body)
			}
		}
	}

	status, body := do("POST", "/api/v1/servers/oauthed/oauth/start", true)
	var start api.AuthStart
	if status != 200 || json.Unmarshal([]byte(body), &start) != nil || !strings.HasPrefix(start.AuthorizationURL, as.URL+"/authorize?") ||
		start.RedirectURL != srv.URL+"/api/v1/servers/oauthed/oauth/callback" {
		t.Fatalf("start: %d %s", status, body)
	}
	resp, err := http.Get(start.AuthorizationURL) // the browser, sent back to the callback without the credential
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "oauthed is authorized") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	var st api.AuthStatus
	_, body = do("GET", "/api/v1/servers/oauthed/oauth", true)
	if json.Unmarshal([]byte(body), &st) != nil || !st.Authorized || st.Grant != sb.GrantAuthorizationCode || st.ExpiresAt == nil {
		t.Fatalf("status: %s", body)
	}
	s, _ := reg.Session("oauthed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.WaitFor(ctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }); err != nil {
		t.Fatalf("the server did not connect after the callback: %v", err)
	}
	if status, _ := do("DELETE", "/api/v1/servers/oauthed/oauth", true); status != 204 {
		t.Fatalf("forget: %d", status)
	}
	_, body = do("GET", "/api/v1/servers/oauthed/oauth", true)
	if json.Unmarshal([]byte(body), &st) != nil || st.Authorized {
		t.Fatalf("status after forget: %s", body)
	}

	// Deleting a server deletes its tokens.
	if err := o.Store.SaveOAuthGrant(context.Background(), "oauthed", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if status, body := do("DELETE", "/api/v1/servers/oauthed", true); status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	if _, err := o.Store.LoadOAuthGrant(context.Background(), "oauthed"); !errors.Is(err, sb.ErrNotFound) {
		t.Fatalf("the deleted server's grant: %v, want ErrNotFound", err)
	}
}

// TestOAuthCallbackOnAnotherReplica: two daemons on one PostgreSQL, as
// behind a load balancer. The authorization begun through one has its
// callback land on the other, which completes it (once); the first one's
// server connects as soon as the grant is announced.
func TestOAuthCallbackOnAnotherReplica(t *testing.T) {
	as := oauthtest.New(t)
	dsn := pgtest.NewDatabase(t)
	key := oauthtest.Key(t)
	const token = "api-token-0123456789"
	replica := func() (*registry.Registry, *httptest.Server) {
		r := registrytest.StartOAuthReplica(t, dsn, key)
		srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: r.Registry, Executor: executor.New(executor.NewMCP(r.Registry)),
			Token: token, OAuth: r.OAuth}))
		t.Cleanup(srv.Close)
		return r.Registry, srv
	}
	regA, a := replica()
	regB, b := replica()
	if _, err := regA.Create(context.Background(), &sb.ServerConfig{Name: "gh", Transport: sb.TransportStreamableHTTP,
		URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // half the slow retry of phase auth
	defer cancel()
	waitSession := func(reg *registry.Registry, what string, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
		t.Helper()
		for range 1000 {
			if s, _ := reg.Session("gh"); s != nil {
				info, err := s.WaitFor(ctx, pred)
				if err != nil {
					t.Fatalf("%s: %v (%+v)", what, err, s.Info())
				}
				return info
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: no session", what)
		return sb.RuntimeInfo{}
	}
	inAuth := func(i sb.RuntimeInfo) bool { return i.Error != nil && i.Error.Phase == sb.PhaseAuth }
	waitSession(regA, "phase auth on a", inAuth)
	waitSession(regB, "phase auth on b", inAuth)

	req, _ := http.NewRequest("POST", a.URL+"/api/v1/servers/gh/oauth/start", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var start api.AuthStart
	if err := json.NewDecoder(resp.Body).Decode(&start); err != nil || resp.StatusCode != 200 {
		t.Fatalf("start on a: %d, %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// The browser: approved, sent to the callback, which the load
	// balancer hands to b.
	loc := oauthtest.Approve(t, start.AuthorizationURL).String()
	callback := strings.Replace(loc, a.URL, b.URL, 1)
	if !strings.HasPrefix(callback, b.URL+"/api/v1/servers/gh/oauth/callback?") {
		t.Fatalf("the authorization server redirected to %q", loc)
	}
	for i, want := range []string{"gh is authorized", "Authorization failed"} { // the second time, a replay
		resp, err := http.Get(callback)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(page), want) {
			t.Fatalf("callback %d on b: %d %s; want %q", i+1, resp.StatusCode, page, want)
		}
	}
	connected := func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }
	waitSession(regB, "b connects", connected)
	waitSession(regA, "a connects", connected)
}
