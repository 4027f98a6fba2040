// Package oauthtest is a real OAuth 2.1 authorization server and an MCP
// server it protects, on 127.0.0.1, for tests of Switchboard's OAuth
// client. One HTTP server hosts both, as many hosted MCP servers do:
//
//	/mcp, /sse                          the test server's MCP endpoints (Streamable HTTP, legacy SSE),
//	                                    behind the go-sdk's auth.RequireBearerToken
//	/.well-known/oauth-protected-resource/{mcp,sse}   protected resource metadata (RFC 9728)
//	/.well-known/oauth-authorization-server           authorization server metadata (RFC 8414)
//	/register                           dynamic client registration (RFC 7591)
//	/authorize                          approves at once: redirects with a code (a person who clicks "Allow")
//	/token                              authorization_code (PKCE S256 checked), refresh_token (rotating:
//	                                    a used refresh token is dead), client_credentials (AddMachineClient)
//
// Tests steer it: tokens' lifetime (TTL), the scopes the MCP endpoints
// require (RequireScopes: a token without them gets 403 insufficient_scope),
// revocation (Revoke, ExpireAccessTokens), forgetting its registered
// clients (ForgetClients: then invalid_client at the token endpoint), and
// read what it saw (Refreshes, RefusedRefreshes, Registrations, Requested,
// MCPRequests).
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// Server is the authorization server and the MCP server it protects.
type Server struct {
	URL string // http://127.0.0.1:port, the issuer

	mu        sync.Mutex
	ttl       time.Duration
	require   []string
	clients   map[string]string // client id -> redirect URI
	secrets   map[string]string // client id -> secret, of machine clients
	codes     map[string]*codeGrant
	access    map[string]*issued
	refresh   map[string]*issued
	refreshes int
	reused    int // refresh tokens presented after they were used (rotated) or revoked
	regs      int
	mcpReqs   int
	requested [][]string // the scopes of every authorization request
}

type codeGrant struct {
	client, redirect, challenge, resource string
	scopes                                []string
}

type issued struct {
	client string
	scopes []string
	expiry time.Time
}

// New starts the servers; they stop when the test ends. Tokens live an
// hour until SetTTL says otherwise; the MCP endpoints require the scope
// "read".
func New(t testing.TB) *Server {
	s := &Server{ttl: time.Hour, require: []string{"read"}, clients: map[string]string{}, secrets: map[string]string{},
		codes: map[string]*codeGrant{}, access: map[string]*issued{}, refresh: map[string]*issued{}}
	mcpServer, err := testserver.NewInProcess(testserver.Options{Name: "protected"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(*http.Request) *mcp.Server { return mcpServer }
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.protect("/mcp", mcp.NewStreamableHTTPHandler(get, nil)))
	mux.Handle("/sse", s.protect("/sse", mcp.NewSSEHandler(get, nil)))
	for _, p := range []string{"/mcp", "/sse"} {
		mux.HandleFunc("/.well-known/oauth-protected-resource"+p, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, &oauthex.ProtectedResourceMetadata{Resource: s.URL + p, AuthorizationServers: []string{s.URL},
				ScopesSupported: []string{"read", "write"}})
		})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		// A session whose DELETE carried a revoked token is still open.
		for ss := range mcpServer.Sessions() {
			ss.Close()
		}
	})
	s.URL = hs.URL
	return s
}

// AddMachineClient registers a client of the client credentials grant,
// which authenticates with HTTP Basic.
func (s *Server) AddMachineClient(id, secret string) {
	s.mu.Lock()
	s.secrets[id] = secret
	s.mu.Unlock()
}

// ForgetClients forgets every client registered so far, as an
// authorization server that lost or expired its registrations: their
// requests to the token endpoint get invalid_client.
func (s *Server) ForgetClients() {
	s.mu.Lock()
	clear(s.clients)
	s.mu.Unlock()
}

// Registrations returns how many clients were registered dynamically.
func (s *Server) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regs
}

// SetTTL sets the lifetime of the access tokens issued from now on.
func (s *Server) SetTTL(d time.Duration) {
	s.mu.Lock()
	s.ttl = d
	s.mu.Unlock()
}

// RequireScopes sets the scopes every MCP request's token must have.
func (s *Server) RequireScopes(scopes ...string) {
	s.mu.Lock()
	s.require = scopes
	s.mu.Unlock()
}

// Revoke kills every access and refresh token issued so far, as a person
// who revokes the app's access in the provider's settings.
func (s *Server) Revoke() {
	s.mu.Lock()
	clear(s.access)
	clear(s.refresh)
	s.mu.Unlock()
}

// ExpireAccessTokens ends every access token issued so far before its
// time; the refresh tokens stay good.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	clear(s.access)
	s.mu.Unlock()
}

// Refreshes returns how many refresh grants succeeded.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// RefusedRefreshes returns how many refresh grants were refused for a
// refresh token that was used already (rotated away) or revoked: with
// rotation, every refresh but one of replicas that refresh at once.
func (s *Server) RefusedRefreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reused
}

// MCPRequests returns how many requests reached the MCP endpoints.
func (s *Server) MCPRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcpReqs
}

// Requested returns the scopes of every authorization request so far.
func (s *Server) Requested() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requested)
}

// protect puts an MCP endpoint behind a bearer token of this server.
func (s *Server) protect(path string, h http.Handler) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		a := s.access[token]
		if a == nil || time.Now().After(a.expiry) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: a.scopes, Expiration: a.expiry}, nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		require := s.require
		s.mcpReqs++
		s.mu.Unlock()
		meta := s.URL + "/.well-known/oauth-protected-resource" + path
		opts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta, Scopes: require}
		auth.RequireBearerToken(verify, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
		})).ServeHTTP(&insufficientScope{ResponseWriter: w, scopes: require, meta: meta}, r)
	})
}

// insufficientScope adds the error="insufficient_scope" of RFC 6750 §3.1
// to the middleware's 403 (it names the scopes, not the error).
type insufficientScope struct {
	http.ResponseWriter
	scopes []string
	meta   string
}

func (w *insufficientScope) WriteHeader(code int) {
	if code == http.StatusForbidden {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
			strings.Join(w.scopes, " "), w.meta))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *insufficientScope) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, &oauthex.AuthServerMeta{
		Issuer:                            s.URL,
		AuthorizationEndpoint:             s.URL + "/authorize",
		TokenEndpoint:                     s.URL + "/token",
		RegistrationEndpoint:              s.URL + "/register",
		ScopesSupported:                   []string{"read", "write", "offline_access"},
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_post", "client_secret_basic"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) != 1 {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := rand.Text()
	s.mu.Lock()
	s.clients[id] = meta.RedirectURIs[0]
	s.regs++
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize approves every valid request at once, as a person who clicks
// "Allow" would.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	redirect, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	switch {
	case !ok || q.Get("redirect_uri") != redirect:
		http.Error(w, "unknown client or redirect_uri", 400)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 is required", 400)
		return
	}
	code := rand.Text()
	scopes := strings.Fields(q.Get("scope"))
	s.mu.Lock()
	s.codes[code] = &codeGrant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scopes: scopes}
	s.requested = append(s.requested, scopes)
	s.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	invalid := func(why string) {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": why})
	}
	switch r.Form.Get("grant_type") {
	case "authorization_code", "refresh_token":
		id := r.Form.Get("client_id")
		if user, _, ok := r.BasicAuth(); ok {
			id = user
		}
		if _, known := s.clients[id]; !known {
			writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "unknown client"})
			return
		}
	}
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		c := s.codes[r.Form.Get("code")]
		delete(s.codes, r.Form.Get("code"))
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		switch {
		case c == nil:
			invalid("unknown or used code")
		case c.client != r.Form.Get("client_id") || c.redirect != r.Form.Get("redirect_uri"):
			invalid("client or redirect_uri mismatch")
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			invalid("PKCE verifier mismatch")
		default:
			s.issue(w, c.client, c.scopes)
		}
	case "refresh_token":
		old := s.refresh[r.Form.Get("refresh_token")]
		if old == nil {
			s.reused++
			invalid("unknown, used or revoked refresh token")
			return
		}
		delete(s.refresh, r.Form.Get("refresh_token")) // rotation: a refresh token works once
		s.refreshes++
		s.issue(w, old.client, old.scopes)
	case "client_credentials":
		id, secret, ok := r.BasicAuth()
		if want, known := s.secrets[id]; !ok || !known || secret != want {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		s.issueAccess(w, id, strings.Fields(r.Form.Get("scope")))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issue writes a token response: a new access token and refresh token.
// s.mu is held.
func (s *Server) issue(w http.ResponseWriter, client string, scopes []string) {
	at, rt := rand.Text(), rand.Text()
	s.access[at] = &issued{client: client, scopes: scopes, expiry: time.Now().Add(s.ttl)}
	s.refresh[rt] = &issued{client: client, scopes: scopes}
	writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
		"expires_in": int(s.ttl.Seconds()), "scope": strings.Join(scopes, " ")})
}

// issueAccess writes a token response with an access token only, as the
// client credentials grant has (RFC 6749 §4.4.3). s.mu is held.
func (s *Server) issueAccess(w http.ResponseWriter, client string, scopes []string) {
	at := rand.Text()
	s.access[at] = &issued{client: client, scopes: scopes, expiry: time.Now().Add(s.ttl)}
	writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer",
		"expires_in": int(s.ttl.Seconds()), "scope": strings.Join(scopes, " ")})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Approve opens authURL as a person's browser would and returns the
// callback URL the authorization server redirects to, without following
// it, so that the test decides where the callback lands.
func Approve(t testing.TB, authURL string) *url.URL {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc
}

// Key returns a new random key to seal OAuth grants with; replicas of a
// test share one, as serve processes share the key file.
func Key(t testing.TB) *sb.OAuthKey {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	k, err := sb.NewOAuthKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
