package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file is the authorization code flow with PKCE, run by the go-sdk's
// auth.AuthorizationCodeHandler: discovery from the server's 401
// (WWW-Authenticate, protected resource metadata, authorization server
// metadata), client registration (Client ID Metadata Document where the
// authorization server supports it and one is configured, the configured
// client, or dynamic client registration), the authorization URL, and the
// code's exchange. What it yields is stored as the server's grant.
//
// Out of band (a daemon): Begin runs the flow up to the authorization URL
// and returns it; the person approves in a browser, which the authorization
// server sends to the redirect URL (the daemon's callback route); Complete
// hands the code to the waiting flow, which exchanges it. A flow not
// completed within FlowTimeout is dropped.

// errAuthorizationFailed: an authorization flow failed; the message says
// where.
var errAuthorizationFailed = sb.NewError(sb.CodeAuthorizationFailed, "authorization failed")

// FlowTimeout bounds an out-of-band authorization: how long the person has
// to approve in the browser.
const FlowTimeout = 10 * time.Minute

// ClientName is how Switchboard names itself to authorization servers in
// dynamic client registration (their consent pages show it).
const ClientName = "Switchboard"

// flows are the out-of-band authorizations under way, by state.
type flows struct {
	mu    sync.Mutex
	state map[string]*flow
	last  map[string]*FlowResult // by server: the last flow's outcome
}

// flow is one out-of-band authorization waiting for its callback.
type flow struct {
	server string
	result chan *auth.AuthorizationResult // the callback's code, to the handler; nil if declined
	done   chan error                     // the handler's outcome, to the callback
}

// FlowResult is how the last authorization of a server ended.
type FlowResult struct {
	At    time.Time
	Error string // "" on success
}

// OAuthStatus is what Switchboard holds for a server's OAuth.
type OAuthStatus struct {
	Authorized bool      // a usable grant is stored
	Pending    bool      // an authorization is waiting for its callback
	Expiry     time.Time // of the access token; zero if none or unknown
	Scopes     []string  // granted
	StepUp     []string  // asked for by a 403, to request next time
	Last       *FlowResult
}

// newHandler returns an authorization code handler for cfg's server whose
// result is stored as the server's grant. redirectURL is where the
// authorization server sends the browser; fetch brings back the code.
func (o *OAuth) newHandler(cfg *sb.ServerConfig, hc *http.Client, redirectURL string, fetch auth.AuthorizationCodeFetcher) (*auth.AuthorizationCodeHandler, error) {
	oc := cfg.OAuth
	if oc == nil {
		oc = &sb.OAuthConfig{}
	}
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirectURL,
		AuthorizationCodeFetcher: fetch,
		Client:                   hc,
		RequestRefreshToken:      true,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{redirectURL},
				ClientName:              ClientName,
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		},
		ScopeFilter: func(discovered []string) []string {
			scopes := discovered
			if len(oc.Scopes) > 0 {
				scopes = oc.Scopes
			}
			if g, err := o.load(context.Background(), cfg.Name); err == nil && g != nil {
				scopes = unionScopes(scopes, g.StepUp)
			}
			return scopes
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			g := &sb.OAuthGrant{Resource: cfg.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: grantedScopes(tok, c.Scopes),
				AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry}
			if err := o.save(ctx, cfg.Name, g); err != nil {
				return nil, fmt.Errorf("saving the OAuth grant: %w", err)
			}
			ts := o.source(cfg.Name)
			ts.mu.Lock()
			ts.grant = g
			ts.mu.Unlock()
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if oc.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: oc.ClientMetadataURL}
	}
	if oc.ClientID != "" {
		pre := &oauthex.ClientCredentials{ClientID: oc.ClientID}
		if oc.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: oc.ClientSecret}
		}
		hcfg.PreregisteredClient = pre
	}
	return auth.NewAuthorizationCodeHandler(hcfg)
}

// grantedScopes returns the scopes the token response names, else those
// requested (RFC 6749 §5.1: an omitted scope means the requested ones).
func grantedScopes(tok *oauth2.Token, requested []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return requested
}

// Begin starts an out-of-band authorization of cfg's server and returns
// the URL to open in a browser. redirectURL is the callback route that
// will call Complete.
func (o *OAuth) Begin(ctx context.Context, cfg *sb.ServerConfig, redirectURL string) (string, error) {
	if cfg.OAuth == nil {
		return "", fmt.Errorf("server %s has no oauth block in its config", cfg.Name)
	}
	if cfg.OAuth.EffectiveGrant() != sb.GrantAuthorizationCode {
		return "", fmt.Errorf("server %s uses grant %s: no person needs to authorize it", cfg.Name, cfg.OAuth.Grant)
	}
	hc := o.client()
	f := &flow{server: cfg.Name, result: make(chan *auth.AuthorizationResult, 1), done: make(chan error, 1)}
	authURL := make(chan string, 1)
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		o.flows.add(u.Query().Get("state"), f)
		authURL <- args.URL
		select {
		case r := <-f.result:
			if r == nil {
				return nil, errors.New("the authorization was declined")
			}
			return r, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("nobody approved within %s", FlowTimeout)
		}
	}
	h, err := o.newHandler(cfg, hc, redirectURL, fetch)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errAuthorizationFailed, err)
	}
	req, resp, err := challenge(ctx, cfg, hc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errAuthorizationFailed, err)
	}
	// The flow outlives the request that began it: it waits for the
	// person, then for the callback.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlowTimeout)
	go func() {
		defer cancel()
		err := h.Authorize(fctx, req, resp)
		o.flows.finish(f, o.now(), err)
		f.done <- err
	}()
	select {
	case u := <-authURL:
		return u, nil
	case err := <-f.done:
		if err == nil {
			return "", errors.New("the authorization server granted tokens without asking anyone") // cannot happen: fetch runs first
		}
		return "", fmt.Errorf("%w: %v", errAuthorizationFailed, err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Complete hands the callback of an out-of-band authorization to its flow
// and returns once the code is exchanged: the server's name, and nil if it
// is now authorized. errParam is the callback's "error" parameter (the
// person declined).
func (o *OAuth) Complete(ctx context.Context, state, code, iss, errParam string) (string, error) {
	f := o.flows.take(state)
	if f == nil {
		return "", fmt.Errorf("%w: no authorization is waiting for this callback (it expired, or was completed already); start it again", errAuthorizationFailed)
	}
	var r *auth.AuthorizationResult // nil: declined
	if errParam == "" {
		r = &auth.AuthorizationResult{Code: code, State: state, Iss: iss}
	}
	f.result <- r
	select {
	case err := <-f.done:
		if errParam != "" {
			return f.server, fmt.Errorf("%w: the authorization server answered %s", errAuthorizationFailed, errParam)
		}
		if err != nil {
			return f.server, fmt.Errorf("%w: %v", errAuthorizationFailed, err)
		}
		return f.server, nil
	case <-ctx.Done():
		return f.server, ctx.Err()
	}
}

// Status reports what is held for server.
func (o *OAuth) Status(ctx context.Context, server string) (OAuthStatus, error) {
	g, err := o.load(ctx, server)
	if err != nil {
		return OAuthStatus{}, err
	}
	st := OAuthStatus{Pending: o.flows.pending(server), Last: o.flows.lastOf(server)}
	if g != nil {
		st.Authorized = usable(g)
		st.Scopes, st.StepUp = g.Scopes, g.StepUp
		if g.AccessToken != "" {
			st.Expiry = g.Expiry
		}
	}
	return st, nil
}

// challenge sends cfg's server an unauthenticated initialize, for the 401
// whose WWW-Authenticate starts discovery. A server that answers otherwise
// gets a bare 401 in its place: discovery then tries the well-known
// metadata URLs.
func challenge(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (*http.Request, *http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"switchboard"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reaching %s: %w", sb.MaskURL(cfg.URL), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp = &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Request: req}
	}
	resp.Body = http.NoBody
	return req, resp, nil
}

// client is the HTTP client of discovery, registration and the token
// endpoint: the sessions' address policy (AllowedNetworks), and none of a
// server's configured headers (they are for the server, not for its
// authorization server).
func (o *OAuth) client() *http.Client {
	return &http.Client{Transport: transportFor(o.AllowedNetworks), Timeout: 30 * time.Second}
}

func (fs *flows) add(state string, f *flow) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.state == nil {
		fs.state = make(map[string]*flow)
	}
	fs.state[state] = f
}

// take removes and returns the flow waiting for state.
func (fs *flows) take(state string) *flow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.state[state]
	delete(fs.state, state)
	return f
}

// finish records how f ended and forgets it if it is still waiting.
func (fs *flows) finish(f *flow, now time.Time, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for s, g := range fs.state {
		if g == f {
			delete(fs.state, s)
		}
	}
	if fs.last == nil {
		fs.last = make(map[string]*FlowResult)
	}
	r := &FlowResult{At: now}
	if err != nil {
		r.Error = err.Error()
	}
	fs.last[f.server] = r
}

func (fs *flows) pending(server string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.state {
		if f.server == server {
			return true
		}
	}
	return false
}

func (fs *flows) lastOf(server string) *FlowResult {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.last[server]
}
