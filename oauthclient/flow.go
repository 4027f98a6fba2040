package oauthclient

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
)

// This file is the authorization code flow with PKCE: discovery from the
// server's 401 (WWW-Authenticate, protected resource metadata,
// authorization server metadata), client registration (Client ID Metadata
// Document where the authorization server supports it and one is
// configured, the configured client, the client Switchboard registered
// before, or dynamic client registration), the authorization URL, and the
// code's exchange. What it yields is stored as the server's grant.
//
// Out of band (a daemon): Begin runs the flow up to the authorization URL,
// stores what the callback will need (the PKCE verifier, the client, the
// redirect URI: sealed, for FlowTimeout) in the database, and returns the
// URL; the person approves in a browser, which the authorization server
// sends to the redirect URL (the daemon's callback route); Complete takes
// the stored flow (once: a replayed callback finds none) and exchanges the
// code. The callback may so reach any replica on the database, not only
// the one that began the flow.
//
// In band (Client.Fetcher, the conformance client), the go-sdk's
// auth.AuthorizationCodeHandler runs the whole flow (newHandler).

// ErrAuthorizationFailed: an authorization flow failed; the message says
// where.
var ErrAuthorizationFailed = sb.NewError(sb.CodeAuthorizationFailed, "authorization failed")

// FlowTimeout bounds an out-of-band authorization: how long the person has
// to approve in the browser.
const FlowTimeout = 10 * time.Minute

// ClientName is how Switchboard names itself to authorization servers in
// dynamic client registration (their consent pages show it).
const ClientName = "Switchboard"

// flows are the outcomes of the last authorization of each server in this
// process, for Status.
type flows struct {
	mu   sync.Mutex
	last map[string]*FlowResult
}

// FlowResult is how the last authorization of a server ended.
type FlowResult struct {
	At    time.Time
	Error string // "" on success
}

// Status is what Switchboard holds for a server's OAuth.
type Status struct {
	Authorized bool        // a usable grant is stored
	Pending    bool        // an authorization is waiting for its callback
	Expiry     time.Time   // of the access token; zero if none or unknown
	Scopes     []string    // granted
	StepUp     []string    // asked for by a 403, to request next time
	Last       *FlowResult // the last authorization: failed in this process, or stored by any
}

// newHandler returns an authorization code handler for cfg's server whose
// result is stored as the server's grant. redirectURL is where the
// authorization server sends the browser; fetch brings back the code.
func (o *Client) newHandler(cfg *sb.ServerConfig, hc *http.Client, redirectURL string, fetch auth.AuthorizationCodeFetcher) (*auth.AuthorizationCodeHandler, error) {
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
			g, _, _ := o.load(context.Background(), cfg.Name)
			return requestScopes(oc, discovered, g)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			// Saved as the out-of-band exchange saves (update): under the
			// token source's lock, as its refreshes save, so that a
			// refresh that read the older grant cannot then store its
			// tokens over these; keeping the client Switchboard registered
			// (the go-sdk registers its own) for the next authorization;
			// and when a person authorized it.
			err := o.update(ctx, cfg.Name, func(g *sb.OAuthGrant) {
				*g = sb.OAuthGrant{Resource: cfg.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
					TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: grantedScopes(tok, c.Scopes),
					AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
					Registered: g.Registered, AuthorizedAt: time.Now()}
			})
			if err != nil {
				return nil, fmt.Errorf("saving the OAuth grant: %w", err)
			}
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

// requestScopes returns the scopes to ask for: the configured ones, else
// those the server advertised (discovered), and those a 403 asked for
// since (g's StepUp; g may be nil). The slice is new: callers append to it.
func requestScopes(oc *sb.OAuthConfig, discovered []string, g *sb.OAuthGrant) []string {
	scopes := discovered
	if len(oc.Scopes) > 0 {
		scopes = oc.Scopes
	}
	var stepUp []string
	if g != nil {
		stepUp = g.StepUp
	}
	return unionScopes(scopes, stepUp)
}

// grantedScopes returns the scopes the token response names, else those
// requested (RFC 6749 §5.1: an omitted scope means the requested ones).
func grantedScopes(tok *oauth2.Token, requested []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return requested
}

// pendingFlow is an out-of-band authorization waiting for its callback:
// what Complete needs to exchange the code. It is stored sealed under the
// server's name, keyed by the hash of its state (flowID).
type pendingFlow struct {
	URL          string         `json:"url"`      // the server's URL: the grant's Resource
	Resource     string         `json:"resource"` // the resource parameter (RFC 8707)
	Issuer       string         `json:"issuer"`
	IssSupported bool           `json:"iss_supported,omitempty"` // RFC 9207: the callback must carry iss
	TokenURL     string         `json:"token_url"`
	RedirectURI  string         `json:"redirect_uri"`
	Verifier     string         `json:"verifier"` // PKCE
	Client       sb.OAuthClient `json:"client"`
	Registered   bool           `json:"registered,omitempty"` // Client was registered dynamically
	Scopes       []string       `json:"scopes,omitempty"`
}

// flowID is the key a flow is stored under: a hash of its state, so that
// the database holds nothing a callback could be forged from.
func flowID(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// Begin starts an out-of-band authorization of cfg's server and returns
// the URL to open in a browser. redirectURL is the callback route that
// will call Complete, on this replica or any other on the same database.
func (o *Client) Begin(ctx context.Context, cfg *sb.ServerConfig, redirectURL string) (string, error) {
	if cfg.OAuth == nil {
		return "", fmt.Errorf("server %s has no oauth block in its config", cfg.Name)
	}
	if cfg.OAuth.EffectiveGrant() != sb.GrantAuthorizationCode {
		return "", fmt.Errorf("server %s uses grant %s: no person needs to authorize it", cfg.Name, cfg.OAuth.Grant)
	}
	hc := o.httpClient()
	prm, asm, scopes, err := discover(ctx, cfg, hc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAuthorizationFailed, err)
	}
	g, _, err := o.load(ctx, cfg.Name)
	if err != nil && !errors.Is(err, sb.ErrOAuthSeal) { // a grant that does not open is replaced
		return "", err
	}
	scopes = requestScopes(cfg.OAuth, scopes, g)
	// SEP-2207: ask for a refresh token where the server offers them.
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	client, registered, err := o.clientFor(ctx, cfg, asm, g, redirectURL, hc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAuthorizationFailed, err)
	}
	p := pendingFlow{URL: cfg.URL, Resource: prm.Resource, Issuer: asm.Issuer,
		IssSupported: asm.AuthorizationResponseIssParameterSupported, TokenURL: asm.TokenEndpoint,
		RedirectURI: redirectURL, Verifier: oauth2.GenerateVerifier(), Client: client, Registered: registered, Scopes: scopes}
	state := rand.Text()
	c := &oauth2.Config{ClientID: client.ClientID, Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint},
		RedirectURL: redirectURL, Scopes: scopes}
	authURL := c.AuthCodeURL(state, oauth2.S256ChallengeOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Resource))
	plain, err := json.Marshal(&p)
	if err != nil {
		return "", err
	}
	// The store's clock, not o.now (which tests move): it expires the row.
	if err := o.Store.SaveOAuthPending(ctx, flowID(state), cfg.Name, o.Key.Seal(cfg.Name, plain), time.Now().Add(FlowTimeout)); err != nil {
		return "", fmt.Errorf("storing the authorization: %w", err)
	}
	return authURL, nil
}

// clientFor returns the client to authorize cfg's server as, in the
// order of the MCP authorization spec: a Client ID Metadata Document
// where the authorization server supports them and one is configured; the
// configured client; the client Switchboard registered before at this
// authorization server for this redirect URI (stored with the grant g);
// else a client registered now, which is stored at once so that the next
// authorization reuses it. registered reports a dynamically registered
// client.
func (o *Client) clientFor(ctx context.Context, cfg *sb.ServerConfig, asm *oauthex.AuthServerMeta, g *sb.OAuthGrant, redirectURL string, hc *http.Client) (c sb.OAuthClient, registered bool, err error) {
	oc := cfg.OAuth
	switch {
	case oc.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		return sb.OAuthClient{ClientID: oc.ClientMetadataURL, AuthStyle: int(oauth2.AuthStyleInParams)}, false, nil
	case oc.ClientID != "":
		return sb.OAuthClient{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
			AuthStyle: int(secretStyle(asm.TokenEndpointAuthMethodsSupported))}, false, nil
	case g != nil && g.Registered != nil && g.Registered.Issuer == asm.Issuer && g.Registered.RedirectURI == redirectURL:
		return *g.Registered, true, nil
	case asm.RegistrationEndpoint == "":
		return c, false, fmt.Errorf("the authorization server %s offers no way to register Switchboard as a client: configure one (oauth.client_id)", asm.Issuer)
	}
	meta := &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirectURL}, ClientName: ClientName,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: "none", ApplicationType: applicationType(redirectURL)}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, hc)
	if err != nil {
		return c, false, fmt.Errorf("registering Switchboard as a client at %s: %w", asm.RegistrationEndpoint, err)
	}
	c = sb.OAuthClient{Issuer: asm.Issuer, RedirectURI: redirectURL, ClientID: resp.ClientID, ClientSecret: resp.ClientSecret,
		AuthStyle: int(registeredStyle(resp.TokenEndpointAuthMethod))}
	err = o.update(ctx, cfg.Name, func(g *sb.OAuthGrant) { g.Registered = &c })
	if err != nil {
		return c, false, fmt.Errorf("storing the registered client: %w", err)
	}
	return c, true, nil
}

// applicationType is the application_type of a client whose redirect URI
// is u (OpenID Connect Dynamic Client Registration): "native" for a
// loopback one, else "web".
func applicationType(u string) string {
	if p, err := url.Parse(u); err == nil {
		if ip, err := netip.ParseAddr(p.Hostname()); err == nil && ip.IsLoopback() || p.Hostname() == "localhost" {
			return "native"
		}
	}
	return "web"
}

// registeredStyle is how a registered client authenticates at the token
// endpoint, from the method its registration answered (RFC 7591: the
// default is client_secret_basic).
func registeredStyle(method string) oauth2.AuthStyle {
	switch method {
	case "none", "client_secret_post":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// update changes the stored grant of server (an empty one if there is
// none, or if it does not open) with change, and stores it unless change
// left it as it was; the token source's copy follows. It waits for the
// token source's turn, so that it serializes with this process's
// refreshes; and it stores with a compare-and-swap, read again and
// changed again if another process wrote meanwhile, so that no write of
// another replica is lost to it (nor, since refreshes swap too, is it
// lost to another replica's refresh of the older grant).
func (o *Client) update(ctx context.Context, server string, change func(*sb.OAuthGrant)) error {
	ts := o.source(server)
	if err := ts.take(ctx); err != nil {
		return err
	}
	defer ts.give()
	for range 4 { // bounded: each round follows a write that was made meanwhile
		g, version, err := o.load(ctx, server)
		if err != nil && !errors.Is(err, sb.ErrOAuthSeal) {
			return err
		}
		var next sb.OAuthGrant
		if g != nil {
			next = *g
		}
		change(&next)
		if g != nil && reflect.DeepEqual(&next, g) {
			return nil // nothing to write, nothing to announce
		}
		v, err := o.swap(ctx, server, version, &next)
		if err == nil {
			ts.set(&next, v)
			return nil
		}
		if !errors.Is(err, sb.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("the OAuth grant of %s kept changing while it was saved", server)
}

// Moved drops the tokens of cfg's server if they were granted for another
// origin than its URL's (scheme, host, port), as they are when the URL has
// just been changed to another host: the copy held here at once, and the
// stored ones if they were granted before changed (when the config was
// stored), so that a replica that applies a config older than an
// authorization already made for the new URL does not forget it. The
// client Switchboard registered is kept for the next authorization. The
// tokens would not be sent anyway (token checks every use); this makes the
// server ask for an authorization at once, on every replica, and leaves
// no token of the old origin in the database.
func (o *Client) Moved(ctx context.Context, cfg *sb.ServerConfig, changed time.Time) error {
	ts := o.source(cfg.Name)
	ts.mu.Lock()
	if g := ts.grant; g != nil && !egress.SameOrigin(g.Resource, cfg.URL) {
		ts.grant, ts.version = nil, 0
	}
	if ts.handler != nil && ts.handlerURL != cfg.URL {
		ts.handler, ts.handlerURL = nil, ""
	}
	ts.mu.Unlock()
	return o.update(ctx, cfg.Name, func(g *sb.OAuthGrant) {
		if usable(g) && !egress.SameOrigin(g.Resource, cfg.URL) && g.AuthorizedAt.Before(changed) {
			*g = sb.OAuthGrant{Registered: g.Registered}
		}
	})
}

// Complete finishes the out-of-band authorization of server whose
// callback carried state: it takes the stored flow (once) and exchanges
// the code; nil if the server is now authorized. errParam is the
// callback's "error" parameter (the person declined).
func (o *Client) Complete(ctx context.Context, server, state, code, iss, errParam string) error {
	p, err := o.takeFlow(ctx, server, state)
	if err != nil {
		return err
	}
	err = o.exchange(ctx, server, p, code, iss, errParam)
	o.flows.finish(server, time.Now(), err) // the wall clock, as AuthorizedAt
	return err
}

// takeFlow removes and returns the flow of server waiting for state.
func (o *Client) takeFlow(ctx context.Context, server, state string) (*pendingFlow, error) {
	stale := fmt.Errorf("%w: no authorization of %s is waiting for this callback (it expired, or was completed already); start it again", ErrAuthorizationFailed, server)
	if state == "" {
		return nil, stale
	}
	owner, sealed, err := o.Store.TakeOAuthPending(ctx, flowID(state))
	if errors.Is(err, sb.ErrNotFound) || err == nil && owner != server {
		return nil, stale
	}
	if err != nil {
		return nil, err
	}
	plain, err := o.Key.Open(server, sealed)
	if err != nil {
		return nil, fmt.Errorf("%w: the stored authorization does not open with this key file; start it again", ErrAuthorizationFailed)
	}
	var p pendingFlow
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("%w: the stored authorization is unreadable (%v); start it again", ErrAuthorizationFailed, err)
	}
	return &p, nil
}

// exchange trades the callback's code for tokens and stores them as the
// grant of server.
func (o *Client) exchange(ctx context.Context, server string, p *pendingFlow, code, iss, errParam string) error {
	if errParam != "" {
		return fmt.Errorf("%w: the authorization server answered %s", ErrAuthorizationFailed, errParam)
	}
	if err := checkIssuer(iss, p.Issuer, p.IssSupported); err != nil {
		return fmt.Errorf("%w: %v", ErrAuthorizationFailed, err)
	}
	c := &oauth2.Config{ClientID: p.Client.ClientID, ClientSecret: p.Client.ClientSecret, RedirectURL: p.RedirectURI,
		Endpoint: oauth2.Endpoint{TokenURL: p.TokenURL, AuthStyle: oauth2.AuthStyle(p.Client.AuthStyle)}}
	tok, err := c.Exchange(context.WithValue(ctx, oauth2.HTTPClient, o.httpClient()), code,
		oauth2.VerifierOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Resource))
	if forgotClient(err) && p.Registered {
		// The authorization server forgot the client Switchboard
		// registered: the next authorization registers a new one.
		if uerr := o.update(ctx, server, func(g *sb.OAuthGrant) { dropRegistered(g, p.Client.ClientID) }); uerr != nil {
			return uerr
		}
		return fmt.Errorf("%w: the authorization server no longer knows the client Switchboard registered; start the authorization again (it registers a new one)", ErrAuthorizationFailed)
	}
	if err != nil {
		return fmt.Errorf("%w: exchanging the code at %s: %v", ErrAuthorizationFailed, p.TokenURL, err)
	}
	return o.update(ctx, server, func(g *sb.OAuthGrant) {
		registered := g.Registered
		if p.Registered {
			registered = &p.Client
		}
		*g = sb.OAuthGrant{Resource: p.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: p.TokenURL,
			AuthStyle: p.Client.AuthStyle, Scopes: grantedScopes(tok, p.Scopes), AccessToken: tok.AccessToken,
			TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Registered: registered,
			AuthorizedAt: time.Now()} // the wall clock, as sessions' errors have
	})
}

// forgotClient reports whether err is the token endpoint's invalid_client:
// it does not know the client (any more).
func forgotClient(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_client"
}

// dropRegistered forgets g's registered client if it is id.
func dropRegistered(g *sb.OAuthGrant, id string) {
	if g.Registered != nil && g.Registered.ClientID == id {
		g.Registered = nil
	}
}

// checkIssuer checks the callback's iss (RFC 9207) against the issuer
// the flow began with: required if the authorization server advertises
// it, and never another issuer's (a mix-up attack).
func checkIssuer(iss, issuer string, supported bool) error {
	switch {
	case supported && iss == "":
		return errors.New("the authorization server advertises the iss parameter, and the callback has none")
	case iss != "" && iss != issuer:
		return fmt.Errorf("the callback comes from the issuer %q, not %q", iss, issuer)
	}
	return nil
}

// Status reports what is held for server.
func (o *Client) Status(ctx context.Context, server string) (Status, error) {
	g, _, err := o.load(ctx, server)
	if err != nil {
		return Status{}, err
	}
	pending, err := o.Store.OAuthPending(ctx, server)
	if err != nil {
		return Status{}, err
	}
	st := Status{Pending: pending, Last: o.flows.lastOf(server)}
	if g != nil && usable(g) && !g.AuthorizedAt.IsZero() && (st.Last == nil || st.Last.At.Before(g.AuthorizedAt)) {
		// Completed later, maybe by another replica's callback: a failure
		// there is seen only there, a success everywhere.
		st.Last = &FlowResult{At: g.AuthorizedAt}
	}
	if g != nil {
		st.Authorized = usable(g)
		st.Scopes, st.StepUp = g.Scopes, g.StepUp
		if g.AccessToken != "" {
			st.Expiry = g.Expiry
		}
	}
	return st, nil
}

// Invalidate drops the copy of server's grant this process holds, so that
// the next request reads the store: another process wrote the grant
// (refreshed, authorized, forgot it).
func (o *Client) Invalidate(server string) {
	o.source(server).set(nil, 0)
}

// AuthorizedAt returns when a person authorized server for the grant
// stored now; zero if none is usable, or it came without a person.
func (o *Client) AuthorizedAt(ctx context.Context, server string) (time.Time, error) {
	g, _, err := o.load(ctx, server)
	if errors.Is(err, sb.ErrOAuthSeal) || err == nil && !usable(g) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return g.AuthorizedAt, nil
}

// NamesResourceMetadata reports whether cfg's server, asked once more
// without credentials (hc sends none of its configured headers), answers
// with a Bearer challenge that names its protected resource metadata: the
// MCP authorization spec's sign that the server uses OAuth.
func NamesResourceMetadata(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) bool {
	resp, err := challenge(ctx, cfg, hc)
	if err != nil {
		return false
	}
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	return bearerParam(cs, "resource_metadata") != ""
}

// challenge sends cfg's server an unauthenticated initialize, for the 401
// whose WWW-Authenticate starts discovery. A server that answers otherwise
// gets a bare 401 in its place: discovery then tries the well-known
// metadata URLs.
func challenge(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (*http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"switchboard"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w", sb.MaskURL(cfg.URL), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp = &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Request: req}
	}
	resp.Body = http.NoBody
	return resp, nil
}

// httpClient is the HTTP client of discovery, registration and the token
// endpoint: the sessions' address policy (Egress), and none of a server's
// configured headers (they are for the server, not for its authorization
// server).
func (o *Client) httpClient() *http.Client {
	return &http.Client{Transport: o.egress().Transport(), Timeout: 30 * time.Second}
}

// egress returns Egress, or else the default policy, made once.
func (o *Client) egress() *egress.Policy {
	if o.Egress != nil {
		return o.Egress
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.policy == nil {
		o.policy = egress.NewPolicy(nil)
	}
	return o.policy
}

// finish records how the last authorization of server ended.
func (fs *flows) finish(server string, now time.Time, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.last == nil {
		fs.last = make(map[string]*FlowResult)
	}
	r := &FlowResult{At: now}
	if err != nil {
		r.Error = err.Error()
	}
	fs.last[server] = r
}

func (fs *flows) lastOf(server string) *FlowResult {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.last[server]
}
