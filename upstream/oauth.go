package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file is the OAuth client of remote sessions (issue #17): the token
// of each request, refreshed before it expires, and what a 401 or 403 means.
// The grant (client and tokens) is kept sealed in an sb.OAuthStore, shared
// by replicas; the authorization flow that creates it is in oauthflow.go.
//
// A session of a server whose config has an "oauth" block sends its
// requests through an oauthTransport:
//
//   - with a usable grant, every request carries its access token; one
//     that is about to expire (refreshMargin) is refreshed first, once for
//     all the requests that need it (single flight), and the new tokens,
//     a rotated refresh token with them, are stored before any request
//     uses them;
//   - a 401 to a request that carried a token refreshes once and retries;
//   - without a usable grant (never authorized, refresh token refused),
//     the attempt fails at once, without a request, with phase auth and
//     code authorization_required: the session waits in error, retrying
//     slowly, until a person runs `switchboard server auth NAME`, which
//     restarts it (on another replica too: the registry reconnects a
//     session waiting in phase auth when the store's feed announces a
//     grant, registry/oauth.go). No retry storm, no 401 loop.
//   - a 403 insufficient_scope records the scopes asked for, and fails the
//     call saying what to run (the connection stays); the next
//     authorization requests them too (step-up);
//   - a client_credentials server (oauthcc.go) gets its tokens itself.
//
// In band (OAuth.Fetcher set, as the conformance client does), a 401 or 403
// runs the whole authorization flow there and then and retries, as the
// go-sdk's own transports do with an auth.OAuthHandler.

// refreshMargin: an access token this close to its expiry is refreshed
// before it is used, so that it does not expire in flight.
const refreshMargin = time.Minute

// OAuth is the OAuth client of a process's sessions: where grants are kept,
// and one token source per server, shared by every session of that server
// (the shared one and per-client ones) so that they refresh once. The zero
// value is not usable; set Store and Key.
type OAuth struct {
	Store sb.OAuthStore
	Key   *sb.OAuthKey
	// Fetcher, if set, makes authorization in band: a request answered
	// 401 (or 403 insufficient_scope) runs the authorization code flow,
	// Fetcher bringing back the code, and is retried. A daemon leaves it
	// nil: nobody is there to approve, so a session waits for
	// Begin/Complete (oauthflow.go) instead.
	Fetcher auth.AuthorizationCodeFetcher
	// RedirectURL is the redirect URI of in-band authorizations.
	RedirectURL string
	// AllowedNetworks is the address policy of requests to authorization
	// servers: set it to the sessions' Options.AllowedNetworks.
	AllowedNetworks []netip.Prefix
	// Now is the clock of expiries; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	sources map[string]*tokenSource
	flows   flows // oauthflow.go
}

// errAuthorizationRequired: there is no usable grant; a person must
// authorize the server.
var errAuthorizationRequired = sb.NewError(sb.CodeAuthorizationRequired, "authorization required")

func (o *OAuth) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// source returns the token source of the server named name.
func (o *OAuth) source(name string) *tokenSource {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sources == nil {
		o.sources = make(map[string]*tokenSource)
	}
	ts := o.sources[name]
	if ts == nil {
		ts = &tokenSource{o: o, name: name}
		o.sources[name] = ts
	}
	return ts
}

// load returns the stored grant of server, or nil if there is none.
func (o *OAuth) load(ctx context.Context, server string) (*sb.OAuthGrant, error) {
	sealed, err := o.Store.LoadOAuthGrant(ctx, server)
	if errors.Is(err, sb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	plain, err := o.Key.Open(server, sealed)
	if err != nil {
		return nil, err
	}
	var g sb.OAuthGrant
	if err := json.Unmarshal(plain, &g); err != nil {
		return nil, fmt.Errorf("stored oauth grant of %s: %w", server, err)
	}
	return &g, nil
}

// save seals and stores g as server's grant.
func (o *OAuth) save(ctx context.Context, server string, g *sb.OAuthGrant) error {
	plain, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return o.Store.SaveOAuthGrant(ctx, server, o.Key.Seal(server, plain))
}

// Forget deletes the stored grant of server (its tokens and client), for
// a server that was deleted or must be authorized from scratch.
func (o *OAuth) Forget(ctx context.Context, server string) error {
	o.Invalidate(server)
	return o.Store.DeleteOAuthGrant(ctx, server)
}

// tokenSource hands out the access token of one server. mu makes refresh
// single-flight: a request that finds the token expiring waits for the
// refresh another request started, and then uses its result.
type tokenSource struct {
	o    *OAuth
	name string

	mu      sync.Mutex
	grant   *sb.OAuthGrant // last loaded or saved; nil: read the store
	handler *auth.AuthorizationCodeHandler
	refusal error  // why the last token request needed a person; nil after a token
	refused string // an access token the server answered 401: never handed out again
}

// required returns an authorization-required error saying why (if why is
// not empty) and what to run.
func (ts *tokenSource) required(why string, args ...any) error {
	msg := "authorization required: run `" + authCommand(ts.name) + "`"
	if why != "" {
		msg = fmt.Sprintf("authorization required (%s): run `%s`", fmt.Sprintf(why, args...), authCommand(ts.name))
	}
	return &authRequiredError{msg: msg}
}

// authRequiredError says that a person must authorize a server, why, and
// what to run. It matches errAuthorizationRequired.
type authRequiredError struct{ msg string }

func (e *authRequiredError) Error() string { return e.msg }
func (e *authRequiredError) Unwrap() error { return errAuthorizationRequired }

// usable reports whether g holds an access token, or a refresh token to
// get one.
func usable(g *sb.OAuthGrant) bool {
	return g != nil && (g.AccessToken != "" || g.RefreshToken != "")
}

// token returns the access token to send to cfg's server, refreshing it
// first if it is about to expire. errAuthorizationRequired means there is
// none to be had without a person.
func (ts *tokenSource) token(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tok, err := ts.locked(ctx, cfg, hc)
	if err == nil || errors.Is(err, errAuthorizationRequired) {
		ts.refusal = err
	}
	return tok, err
}

// refuse records why the server cannot be used without a person.
func (ts *tokenSource) refuse(err error) {
	ts.mu.Lock()
	ts.refusal = err
	ts.mu.Unlock()
}

// lastRefusal returns why the last token request needed a person, or nil.
// The go-sdk reports a failed request as text, so this is how a failed
// connection attempt learns that the refresh token was refused.
func (ts *tokenSource) lastRefusal() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.refusal
}

// locked is token with ts.mu held.
func (ts *tokenSource) locked(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (string, error) {
	if g := ts.grant; g != nil && ts.fresh(g) {
		return g.AccessToken, nil
	}
	// Read the store: another replica (or process) may have refreshed.
	g, err := ts.o.load(ctx, ts.name)
	if err != nil {
		return "", err
	}
	ts.grant = g
	if cfg.OAuth != nil && cfg.OAuth.EffectiveGrant() == sb.GrantClientCredentials &&
		(!usable(g) || !sameOrigin(g.Resource, cfg.URL) || !ts.fresh(g) && g.RefreshToken == "") {
		return ts.clientCredentials(ctx, cfg, hc)
	}
	if !usable(g) {
		if ts.refusal != nil {
			return "", ts.refusal // say why, as long as it holds
		}
		return "", ts.required("")
	}
	if !sameOrigin(g.Resource, cfg.URL) {
		return "", ts.required("the server was authorized at another address, %s; its tokens are not sent to %s",
			sb.MaskURL(g.Resource), sb.MaskURL(cfg.URL))
	}
	if ts.fresh(g) {
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		return "", ts.required("the access token expired and the authorization server gave no refresh token")
	}
	return ts.refresh(ctx, g, hc)
}

// fresh reports whether g's access token is good for refreshMargin more,
// and was not refused by the server.
func (ts *tokenSource) fresh(g *sb.OAuthGrant) bool {
	return g.AccessToken != "" && g.AccessToken != ts.refused &&
		(g.Expiry.IsZero() || ts.o.now().Add(refreshMargin).Before(g.Expiry))
}

// refresh trades g's refresh token for new tokens and stores them before
// returning the access token: a rotated refresh token is saved before it
// can be needed, so a crash cannot lose it. A refresh token the server
// refuses (invalid_grant: revoked or expired) is forgotten, which puts the
// server back to "authorization required"; so is a registered client it
// no longer knows (invalid_client), with the client. ts.mu is held.
func (ts *tokenSource) refresh(ctx context.Context, g *sb.OAuthGrant, hc *http.Client) (string, error) {
	c := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
	old := &oauth2.Token{RefreshToken: g.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := c.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), old).Token()
	if forgotClient(err) && g.Registered != nil && g.Registered.ClientID == g.ClientID {
		// The authorization server forgot the client Switchboard
		// registered: its tokens are dead, and the next authorization
		// registers a new client rather than retrying this one.
		next := *g
		next.AccessToken, next.RefreshToken, next.Expiry = "", "", time.Time{}
		dropRegistered(&next, g.ClientID)
		if err := ts.keep(ctx, &next); err != nil {
			return "", err
		}
		return "", ts.required("the authorization server no longer knows the client Switchboard registered; authorizing again registers a new one")
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
		// Another replica may have refreshed first: with rotation, the
		// refresh token used here is then spent, and the new one stored.
		if cur, lerr := ts.o.load(ctx, ts.name); lerr == nil && usable(cur) && cur.RefreshToken != g.RefreshToken {
			ts.grant = cur
			if ts.fresh(cur) {
				return cur.AccessToken, nil
			}
			return ts.refresh(ctx, cur, hc)
		}
		next := *g
		next.AccessToken, next.RefreshToken, next.Expiry = "", "", time.Time{}
		if err := ts.keep(ctx, &next); err != nil {
			return "", err
		}
		return "", ts.required("the authorization server refused the refresh token: %s", re.ErrorCode)
	}
	if err != nil {
		return "", fmt.Errorf("refreshing the OAuth token at %s: %w", g.TokenURL, err)
	}
	next := *g
	next.AccessToken, next.TokenType, next.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		next.RefreshToken = tok.RefreshToken
	}
	if err := ts.keep(ctx, &next); err != nil {
		return "", fmt.Errorf("saving the refreshed OAuth token: %w", err)
	}
	return next.AccessToken, nil
}

// keep stores g as the server's grant and as ts's copy of it. ts.mu is
// held.
func (ts *tokenSource) keep(ctx context.Context, g *sb.OAuthGrant) error {
	if err := ts.o.save(ctx, ts.name, g); err != nil {
		return err
	}
	ts.grant = g
	return nil
}

// expire records that the server refused the access token token (401),
// so that the next request refreshes, unless another request or replica
// has already replaced it.
func (ts *tokenSource) expire(token string) {
	ts.mu.Lock()
	ts.refused = token
	ts.mu.Unlock()
}

// stepUp records that the server asked for scopes the grant lacks.
func (ts *tokenSource) stepUp(ctx context.Context, scopes []string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	g, err := ts.o.load(ctx, ts.name)
	if err != nil || g == nil {
		return err
	}
	next := *g
	next.StepUp = unionScopes(g.StepUp, scopes)
	if len(next.StepUp) == len(g.StepUp) {
		return nil // recorded already: no write, no announcement
	}
	return ts.keep(ctx, &next)
}

// oauthTransport adds the server's access token to every request of a
// session (see the top of the file).
type oauthTransport struct {
	base http.RoundTripper
	ts   *tokenSource
	cfg  *sb.ServerConfig
	hc   *http.Client // for the token endpoint: the session's address policy, no headers
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tok, err := t.ts.token(ctx, t.cfg, t.hc)
	if err != nil && !errors.Is(err, errAuthorizationRequired) {
		return nil, err
	}
	if err != nil && t.ts.o.Fetcher == nil {
		// Nobody can approve in band: a request without a token would be
		// refused, so none is sent (no 401 loop, no load on the server).
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		if bearerParam(challenges, "error") != "insufficient_scope" {
			return resp, nil
		}
		if scopes := strings.Fields(bearerParam(challenges, "scope")); len(scopes) > 0 {
			if err := t.ts.stepUp(ctx, scopes); err != nil {
				resp.Body.Close()
				return nil, err
			}
		}
	}
	if t.ts.o.Fetcher != nil {
		return t.authorizeAndRetry(req, resp)
	}
	if resp.StatusCode == http.StatusForbidden {
		// Step-up needs a person: the request fails saying what to run.
		// The connection stays: other tools may need no more scopes.
		resp.Body.Close()
		err := t.ts.required("the server asks for more scopes: %s", bearerParam(challenges, "scope"))
		t.ts.refuse(err)
		return nil, refusedMessage(err)
	}
	if resp.StatusCode == http.StatusUnauthorized && tok != "" {
		// The server refused a token we thought good (revoked, or expired
		// early): refresh once and retry. If the refresh token is refused
		// too, the retry fails with errAuthorizationRequired.
		t.ts.expire(tok)
		if retry, ok := rewound(req); ok {
			if tok, err = t.ts.token(ctx, t.cfg, t.hc); err == nil {
				resp.Body.Close()
				return t.send(retry, tok)
			}
			if errors.Is(err, errAuthorizationRequired) {
				resp.Body.Close()
				return nil, err
			}
		}
	}
	return resp, nil
}

// send sends req with the access token tok ("" for none).
func (t *oauthTransport) send(req *http.Request, tok string) (*http.Response, error) {
	if tok != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.base.RoundTrip(req)
}

// authorizeAndRetry runs the authorization flow in band for a request the
// server answered resp (401 or 403), and sends the request once more. If the
// flow fails, resp is returned as it was.
func (t *oauthTransport) authorizeAndRetry(req *http.Request, resp *http.Response) (*http.Response, error) {
	retry, ok := rewound(req)
	if !ok {
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	copyOf := func() *http.Response {
		c := *resp
		c.Body = io.NopCloser(bytes.NewReader(body))
		return &c
	}
	h, err := t.ts.inBandHandler(t.cfg, t.hc)
	if err == nil {
		err = h.Authorize(req.Context(), req, copyOf())
	}
	if err != nil {
		t.ts.refuse(fmt.Errorf("%w: %v", errAuthorizationFailed, err))
		return copyOf(), nil
	}
	tok, err := t.ts.token(req.Context(), t.cfg, t.hc)
	if err != nil {
		return nil, err
	}
	return t.send(retry, tok)
}

// inBandHandler returns the authorization code handler of in-band flows,
// one per server for the life of the process: it remembers the scopes
// granted so far, which a step-up adds to.
func (ts *tokenSource) inBandHandler(cfg *sb.ServerConfig, hc *http.Client) (*auth.AuthorizationCodeHandler, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.handler != nil {
		return ts.handler, nil
	}
	h, err := ts.o.newHandler(cfg, hc, ts.o.RedirectURL, ts.o.Fetcher)
	if err != nil {
		return nil, err
	}
	ts.handler = h
	return h, nil
}

// rewound returns a copy of req that can be sent again, with its body
// rewound, or false if its body cannot be.
func rewound(req *http.Request) (*http.Request, bool) {
	r := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return r, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	r.Body = b
	return r, true
}

// bearerParam returns the parameter name of the first Bearer challenge
// that has it.
func bearerParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// unionScopes returns a's scopes followed by those of b it lacks.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sameOrigin reports whether two URLs have the same origin (origin.go).
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && origin(ua) == origin(ub)
}
