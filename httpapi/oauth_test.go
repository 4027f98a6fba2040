package httpapi_test

import (
	"context"
	"crypto/rand"
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
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestOAuthRoutes: start, callback (no credential: the state is one),
// status and forget, and their refusals.
func TestOAuthRoutes(t *testing.T) {
	as := oauthtest.New(t)
	key := make([]byte, 32)
	rand.Read(key)
	k, _ := sb.NewOAuthKey(key)
	o := &upstream.OAuth{Store: sqlitetest.Store(t), Key: k}
	reg := registrytest.New(t, &registry.Options{Session: upstream.Options{OAuth: o}},
		&sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}},
		&sb.ServerConfig{Name: "plain", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp"})
	const token = "api-token-0123456789"
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: executor.New(executor.NewMCP(reg)),
		Token: token, OAuth: o}))
	t.Cleanup(srv.Close)
	do := func(method, path string, bearer bool) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if bearer {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	for _, tc := range []struct {
		method, path string
		bearer       bool
		status       int
		want         string
	}{
		{"POST", "/api/v1/servers/oauthed/auth", false, 401, "unauthorized"},
		{"POST", "/api/v1/servers/nope/auth", true, 404, "not_found"},
		{"POST", "/api/v1/servers/plain/auth", true, 400, `no \"oauth\" block`},
		{"GET", "/api/v1/oauth/callback?state=forged&code=x", false, 400, "Authorization failed"},
	} {
		if status, body := do(tc.method, tc.path, tc.bearer); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}

	status, body := do("POST", "/api/v1/servers/oauthed/auth", true)
	var start api.AuthStart
	if status != 200 || json.Unmarshal([]byte(body), &start) != nil || !strings.HasPrefix(start.AuthorizationURL, as.URL+"/authorize?") ||
		start.RedirectURL != srv.URL+"/api/v1/oauth/callback" {
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
	_, body = do("GET", "/api/v1/servers/oauthed/auth", true)
	if json.Unmarshal([]byte(body), &st) != nil || !st.Authorized || st.Grant != sb.GrantAuthorizationCode || st.ExpiresAt == nil {
		t.Fatalf("status: %s", body)
	}
	s, _ := reg.Session("oauthed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.WaitFor(ctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }); err != nil {
		t.Fatalf("the server did not connect after the callback: %v", err)
	}
	if status, _ := do("DELETE", "/api/v1/servers/oauthed/auth", true); status != 204 {
		t.Fatalf("forget: %d", status)
	}
	_, body = do("GET", "/api/v1/servers/oauthed/auth", true)
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
