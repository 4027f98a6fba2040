// Package oauthclient is the OAuth client of remote sessions (issue #17): the token
// of each request, refreshed before it expires, and what a 401 or 403 means.
// The grant (client and tokens) is kept sealed in an sb.OAuthStore, shared
// by replicas; the authorization flow that creates it is in flow.go.
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
//   - a client_credentials server (clientcredentials.go) gets its tokens itself.
//
// In band (Client.Fetcher set, as the conformance client does), a 401 or 403
// runs the whole authorization flow there and then and retries, as the
// go-sdk's own transports do with an auth.OAuthHandler.
//
// The session's side (the gate before an attempt, what a failure means)
// is upstream's: it uses Ready, Transport, LastRefusal and the errors
// here.
package oauthclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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

// refreshMargin: an access token this close to its expiry is refreshed
// before it is used, so that it does not expire in flight.
const refreshMargin = time.Minute

// Client is the OAuth client of a process's sessions: where grants are kept,
// and one token source per server, shared by every session of that server
// (the shared one and per-client ones) so that they refresh once. The zero
// value is not usable; set Store and Key.
type Client struct {
	Store sb.OAuthStore
	Key   *sb.OAuthKey
	// Fetcher, if set, makes authorization in band: a request answered
	// 401 (or 403 insufficient_scope) runs the authorization code flow,
	// Fetcher bringing back the code, and is retried. A daemon leaves it
	// nil: nobody is there to approve, so a session waits for
	// Begin/Complete (flow.go) instead.
	Fetcher auth.AuthorizationCodeFetcher
	// RedirectURL is the redirect URI of in-band authorizations.
	RedirectURL string
	// Egress is the address policy of requests to authorization servers:
	// set it to the sessions' (upstream.Options.Egress). Nil means the
	// default policy, with a transport of this Client's own.
	Egress *egress.Policy
	// Now is the clock of expiries; nil means time.Now.
	Now func() time.Time

	// Logger, if set, hears of what goes wrong in the background (a claim
	// of a refresh that could not be released); nil discards.
	Logger *slog.Logger

	mu       sync.Mutex
	sources  map[string]*tokenSource
	holderID string         // holder
	flows    flows          // flow.go
	policy   *egress.Policy // Egress, or the default made for it
}

// ErrAuthorizationRequired: there is no usable grant; a person must
// authorize the server. Every such error of a Client is a *RequiredError
// that matches it.
var ErrAuthorizationRequired = sb.NewError(sb.CodeAuthorizationRequired, "authorization required")

func (o *Client) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (o *Client) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// refreshTimeout bounds how long a request waits for its token, all told:
// for this process's other requests that read or refresh it (the token
// source's turn), for another replica's refresh, and for its own request
// to the token endpoint. It is also how long a claim of a refresh lasts
// (sb.OAuthStore.ClaimOAuthRefresh): its holder has given up by then, so a
// replica that died holding one holds up the others this long at most.
const refreshTimeout = 15 * time.Second

// refreshPoll is how often a replica waiting for another's refresh reads
// the store for its tokens.
const refreshPoll = 50 * time.Millisecond

// errRefreshTimeout: a request waited refreshTimeout for its token.
var errRefreshTimeout = fmt.Errorf("no OAuth token within %s (the token endpoint, or another replica's refresh of it, did not answer)", refreshTimeout)

// source returns the token source of the server named name.
func (o *Client) source(name string) *tokenSource {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sources == nil {
		o.sources = make(map[string]*tokenSource)
	}
	ts := o.sources[name]
	if ts == nil {
		ts = &tokenSource{o: o, name: name, turn: make(chan struct{}, 1)}
		o.sources[name] = ts
	}
	return ts
}

// holder returns who this process is in claims of refreshes: random, so
// that no two processes (or two OAuth clients of one) are the same.
func (o *Client) holder() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.holderID == "" {
		o.holderID = rand.Text()
	}
	return o.holderID
}

// load returns the stored grant of server and its version, or nil and 0
// if there is none.
func (o *Client) load(ctx context.Context, server string) (*sb.OAuthGrant, int64, error) {
	sealed, version, err := o.Store.LoadOAuthGrantVersion(ctx, server)
	if errors.Is(err, sb.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	plain, err := o.Key.Open(server, sealed)
	if err != nil {
		return nil, version, err
	}
	var g sb.OAuthGrant
	if err := json.Unmarshal(plain, &g); err != nil {
		return nil, version, fmt.Errorf("stored oauth grant of %s: %w", server, err)
	}
	return &g, version, nil
}

// swap seals g and stores it as server's grant if the stored version is
// still version (0: none stored), returning the new version; an error
// wrapping sb.ErrConflict if another write came first.
func (o *Client) swap(ctx context.Context, server string, version int64, g *sb.OAuthGrant) (int64, error) {
	plain, err := json.Marshal(g)
	if err != nil {
		return 0, err
	}
	return o.Store.SwapOAuthGrant(ctx, server, version, o.Key.Seal(server, plain))
}

// Forget deletes the stored grant of server (its tokens and client), for
// a server that was deleted or must be authorized from scratch.
func (o *Client) Forget(ctx context.Context, server string) error {
	o.Invalidate(server)
	return o.Store.DeleteOAuthGrant(ctx, server)
}

// tokenSource hands out the access token of one server. Its turn makes a
// refresh single-flight in the process: a request that finds the token
// expiring waits for the refresh another request started, and then uses
// its result; the claims of the store (refreshShared) do the same between
// processes.
type tokenSource struct {
	o    *Client
	name string
	// turn is held by the one request at a time that reads the store for
	// the token or writes the grant; the others wait for it, no longer
	// than their context allows (a channel, not a mutex, for that).
	turn chan struct{}

	mu         sync.Mutex     // guards the fields below; never held across I/O
	grant      *sb.OAuthGrant // last loaded or saved; nil: read the store
	version    int64          // grant's stored version
	handler    *auth.AuthorizationCodeHandler
	handlerURL string // the server URL handler authorizes: another makes another handler
	refusal    error  // why the last token request needed a person; nil after a token
	refused    string // an access token the server answered 401: never handed out again
}

// take waits for ts's turn, as long as ctx allows.
func (ts *tokenSource) take(ctx context.Context) error {
	select {
	case ts.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// give ends the turn taken by take.
func (ts *tokenSource) give() { <-ts.turn }

// set records g, stored at version, as ts's copy of the grant.
func (ts *tokenSource) set(g *sb.OAuthGrant, version int64) {
	ts.mu.Lock()
	ts.grant, ts.version = g, version
	ts.mu.Unlock()
}

// required returns an authorization-required error saying why (if why is
// not empty) and what to run.
func (ts *tokenSource) required(why string, args ...any) error {
	if why != "" {
		why = fmt.Sprintf(why, args...)
	}
	return NewRequiredError(ts.name, why)
}

// NewRequiredError returns the error that says a person must authorize
// server: why (if it is not empty), and what to run.
func NewRequiredError(server, why string) error {
	msg := "authorization required: run `" + AuthCommand(server) + "`"
	if why != "" {
		msg = fmt.Sprintf("authorization required (%s): run `%s`", why, AuthCommand(server))
	}
	return &RequiredError{msg: msg}
}

// RequiredError says that a person must authorize a server, why, and
// what to run. It matches ErrAuthorizationRequired.
type RequiredError struct{ msg string }

func (e *RequiredError) Error() string { return e.msg }
func (e *RequiredError) Unwrap() error { return ErrAuthorizationRequired }

// AuthCommand is what a person runs to authorize server.
func AuthCommand(server string) string { return "switchboard server auth " + server }

// usable reports whether g holds an access token, or a refresh token to
// get one.
func usable(g *sb.OAuthGrant) bool {
	return g != nil && (g.AccessToken != "" || g.RefreshToken != "")
}

// token returns the access token to send to target (a URL of cfg's
// server), refreshing it first if it is about to expire.
// ErrAuthorizationRequired means there is none to be had without a
// person. A token goes only to the origin of the URL it was granted for:
// that is checked on every use, of the copy held here too, since the
// server's URL may have changed since it was granted. The whole of it is
// bounded by refreshTimeout.
func (ts *tokenSource) token(ctx context.Context, cfg *sb.ServerConfig, target string, hc *http.Client) (string, error) {
	if tok, ok := ts.cached(cfg, target); ok {
		return tok, nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, refreshTimeout, errRefreshTimeout)
	defer cancel()
	if err := ts.take(ctx); err != nil {
		return "", err
	}
	defer ts.give()
	tok, err := ts.locked(ctx, cfg, target, hc)
	if err == nil || errors.Is(err, ErrAuthorizationRequired) {
		ts.refuse(err)
	}
	if err != nil && !errors.Is(err, errRefreshTimeout) && errors.Is(context.Cause(ctx), errRefreshTimeout) {
		err = fmt.Errorf("%w: %v", errRefreshTimeout, err) // what the bound cut short
	}
	return tok, err
}

// cached returns the access token of ts's copy of the grant if it is
// fresh and may be sent to cfg's URL and to target.
func (ts *tokenSource) cached(cfg *sb.ServerConfig, target string) (string, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	g := ts.grant
	if g == nil || !freshAt(g, ts.refused, ts.o.now()) || sendable(g, cfg, target) != "" {
		return "", false
	}
	ts.refusal = nil
	return g.AccessToken, true
}

// sendable returns "" if g's tokens may be sent to cfg's URL and to
// target, else the URL they may not be sent to.
func sendable(g *sb.OAuthGrant, cfg *sb.ServerConfig, target string) string {
	for _, to := range []string{cfg.URL, target} {
		if !egress.SameOrigin(g.Resource, to) {
			return to
		}
	}
	return ""
}

// refuse records why the server cannot be used without a person (nil:
// it can).
func (ts *tokenSource) refuse(err error) {
	ts.mu.Lock()
	ts.refusal = err
	ts.mu.Unlock()
}

// LastRefusal returns why the last token request for server needed a
// person, or nil. The go-sdk reports a failed request as text, so this is
// how a failed connection attempt learns that the refresh token was
// refused.
func (o *Client) LastRefusal(server string) error {
	return o.source(server).lastRefusal()
}

// lastRefusal is LastRefusal of ts's server.
func (ts *tokenSource) lastRefusal() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.refusal
}

// locked is token with ts's turn held.
func (ts *tokenSource) locked(ctx context.Context, cfg *sb.ServerConfig, target string, hc *http.Client) (string, error) {
	if tok, ok := ts.cached(cfg, target); ok {
		return tok, nil // got by the request whose turn this waited for
	}
	// Read the store: another replica (or process) may have refreshed.
	g, version, err := ts.o.load(ctx, ts.name)
	if err != nil {
		return "", err
	}
	ts.set(g, version)
	if cfg.OAuth != nil && cfg.OAuth.EffectiveGrant() == sb.GrantClientCredentials &&
		(!usable(g) || sendable(g, cfg, cfg.URL) != "" || !ts.fresh(g) && g.RefreshToken == "") {
		if to := sendable(&sb.OAuthGrant{Resource: cfg.URL}, cfg, target); to != "" {
			return "", ts.required("its tokens are not sent to %s, another origin than %s", sb.MaskURL(to), sb.MaskURL(cfg.URL))
		}
		return ts.clientCredentials(ctx, cfg, hc)
	}
	if !usable(g) {
		if refusal := ts.lastRefusal(); refusal != nil {
			return "", refusal // say why, as long as it holds
		}
		return "", ts.required("")
	}
	if to := sendable(g, cfg, target); to != "" {
		return "", ts.required("the server was authorized at another address, %s; its tokens are not sent to %s",
			sb.MaskURL(g.Resource), sb.MaskURL(to))
	}
	if ts.fresh(g) {
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		return "", ts.required("the access token expired and the authorization server gave no refresh token")
	}
	return ts.refreshShared(ctx, g, cfg, target, hc)
}

// fresh reports whether g's access token is good for refreshMargin more,
// and was not refused by the server.
func (ts *tokenSource) fresh(g *sb.OAuthGrant) bool {
	ts.mu.Lock()
	refused := ts.refused
	ts.mu.Unlock()
	return freshAt(g, refused, ts.o.now())
}

// freshAt reports whether g's access token, unless it is refused, is good
// at now for refreshMargin more.
func freshAt(g *sb.OAuthGrant, refused string, now time.Time) bool {
	return g.AccessToken != "" && g.AccessToken != refused && (g.Expiry.IsZero() || now.Add(refreshMargin).Before(g.Expiry))
}

// valid reports whether g's access token may be used at all now: it has
// not expired, and was not refused. A replica that waited for another's
// refresh takes the token it brought even if it is within the refresh
// margin (a token that lives less than the margin always is): it is the
// newest there is.
func (ts *tokenSource) valid(g *sb.OAuthGrant) bool {
	ts.mu.Lock()
	refused := ts.refused
	ts.mu.Unlock()
	return g.AccessToken != "" && g.AccessToken != refused && (g.Expiry.IsZero() || ts.o.now().Before(g.Expiry))
}

// refreshShared refreshes stale, the grant read from the store, once for
// every replica on the store: it claims the refresh, and asks the token
// endpoint only with the claim. While another replica holds it, it waits
// for that one's tokens, reading the store every refreshPoll, as long as
// ctx allows (token bounds it by refreshTimeout). ts's turn is held.
func (ts *tokenSource) refreshShared(ctx context.Context, stale *sb.OAuthGrant, cfg *sb.ServerConfig, target string, hc *http.Client) (string, error) {
	holder := ts.o.holder()
	poll := time.NewTimer(refreshPoll)
	defer poll.Stop()
	for {
		claimed, err := ts.o.Store.ClaimOAuthRefresh(ctx, ts.name, holder, refreshTimeout)
		if err != nil {
			return "", fmt.Errorf("claiming the refresh of the OAuth token: %w", err)
		}
		if claimed {
			return ts.refreshClaimed(ctx, stale, cfg, target, hc, holder)
		}
		poll.Reset(refreshPoll)
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-poll.C:
		}
		if _, _, tok, done, err := ts.refreshedBy(ctx, stale, cfg, target); done {
			return tok, err
		}
	}
}

// refreshedBy reads the store (g, stored at version) for the tokens
// another replica's refresh of stale brought. done is false if there are
// none yet.
func (ts *tokenSource) refreshedBy(ctx context.Context, stale *sb.OAuthGrant, cfg *sb.ServerConfig, target string) (g *sb.OAuthGrant, version int64, tok string, done bool, err error) {
	g, version, err = ts.o.load(ctx, ts.name)
	if err != nil {
		return nil, 0, "", true, err
	}
	ts.set(g, version)
	switch {
	case !usable(g):
		// Refused to the other replica, or forgotten.
		return g, version, "", true, ts.required("the authorization server refused the refresh token")
	case sendable(g, cfg, target) != "":
		return g, version, "", true, ts.required("the server was authorized at another address, %s; its tokens are not sent to %s",
			sb.MaskURL(g.Resource), sb.MaskURL(cfg.URL))
	case g.AccessToken != stale.AccessToken && ts.valid(g):
		return g, version, g.AccessToken, true, nil
	}
	return g, version, "", false, nil
}

// refreshClaimed refreshes with the claim held, and releases it. The
// store is read once more first: the claim's last holder may have
// refreshed since stale was read.
func (ts *tokenSource) refreshClaimed(ctx context.Context, stale *sb.OAuthGrant, cfg *sb.ServerConfig, target string, hc *http.Client, holder string) (string, error) {
	defer func() {
		// Released even if ctx ended; if this fails, the claim expires.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := ts.o.Store.ReleaseOAuthRefresh(rctx, ts.name, holder); err != nil {
			ts.o.logger().Warn("releasing the claim of an OAuth refresh", "server", ts.name, "error", err)
		}
	}()
	g, version, tok, done, err := ts.refreshedBy(ctx, stale, cfg, target)
	if done {
		return tok, err
	}
	if g.RefreshToken == "" {
		return "", ts.required("the access token expired and the authorization server gave no refresh token")
	}
	return ts.refresh(ctx, g, version, hc)
}

// refresh trades g's refresh token (g is stored at version) for new tokens
// and stores them before returning the access token: a rotated refresh
// token is saved before it can be needed, so a crash cannot lose it. A
// refresh token the server refuses (invalid_grant: revoked or expired) is
// forgotten, which puts the server back to "authorization required"; so
// is a registered client it no longer knows (invalid_client), with the
// client. Every write is a compare-and-swap (settle): what another write
// stored meanwhile is never overwritten with what this one read. The
// refresh's claim is held.
func (ts *tokenSource) refresh(ctx context.Context, g *sb.OAuthGrant, version int64, hc *http.Client) (string, error) {
	c := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
	old := &oauth2.Token{RefreshToken: g.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := c.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), old).Token()
	if forgotClient(err) && g.Registered != nil && g.Registered.ClientID == g.ClientID {
		// The authorization server forgot the client Switchboard
		// registered: its tokens are dead, and the next authorization
		// registers a new client rather than retrying this one.
		return ts.forgetRefused(ctx, g, version, func(next *sb.OAuthGrant) { dropRegistered(next, g.ClientID) },
			"the authorization server no longer knows the client Switchboard registered; authorizing again registers a new one")
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
		return ts.forgetRefused(ctx, g, version, func(*sb.OAuthGrant) {},
			"the authorization server refused the refresh token: %s", re.ErrorCode)
	}
	if err != nil {
		return "", fmt.Errorf("refreshing the OAuth token at %s: %w", g.TokenURL, err)
	}
	stored, won, err := ts.settle(ctx, g, version, func(next *sb.OAuthGrant) {
		next.AccessToken, next.TokenType, next.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
		if tok.RefreshToken != "" {
			next.RefreshToken = tok.RefreshToken
		}
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("saving the refreshed OAuth token: %w", err)
	case stored == nil:
		return "", ts.required("the authorization was forgotten while its token was refreshed")
	case won || !ts.valid(stored):
		return tok.AccessToken, nil
	}
	return stored.AccessToken, nil // another authorization was stored meanwhile: it wins
}

// forgetRefused forgets g's tokens (and whatever drop changes) after the
// authorization server refused them, and returns why a person is needed;
// unless the grant was replaced meanwhile by one with other tokens (an
// authorization), whose token is then used.
func (ts *tokenSource) forgetRefused(ctx context.Context, g *sb.OAuthGrant, version int64, drop func(*sb.OAuthGrant), why string, args ...any) (string, error) {
	stored, won, err := ts.settle(ctx, g, version, func(next *sb.OAuthGrant) {
		next.AccessToken, next.RefreshToken, next.Expiry = "", "", time.Time{}
		drop(next)
	})
	if err != nil {
		return "", err
	}
	if !won && usable(stored) && ts.valid(stored) {
		return stored.AccessToken, nil
	}
	return "", ts.required(why, args...)
}

// settle stores from (read at version) changed by change, with a
// compare-and-swap. If another write came first, the grant it stored is
// read: one that kept from's tokens (a step-up's scopes, a registered
// client; or their refusal by another replica's refresh of the same
// tokens) is changed instead and stored in turn; one with other tokens
// (an authorization made meanwhile), or none (forgotten), wins and is
// returned as it is, with won false. Never does an empty grant go over a
// good one, nor a refreshed one over a newer authorization.
func (ts *tokenSource) settle(ctx context.Context, from *sb.OAuthGrant, version int64, change func(*sb.OAuthGrant)) (stored *sb.OAuthGrant, won bool, err error) {
	base := from
	for range 4 { // bounded: each round follows a write that was made meanwhile
		next := *base
		change(&next)
		v, err := ts.o.swap(ctx, ts.name, version, &next)
		if err == nil {
			ts.set(&next, v)
			return &next, true, nil
		}
		if !errors.Is(err, sb.ErrConflict) {
			return nil, false, err
		}
		cur, cv, err := ts.o.load(ctx, ts.name)
		if err != nil {
			return nil, false, err
		}
		ts.set(cur, cv)
		if cur == nil || !sameTokens(cur, from) {
			return cur, false, nil
		}
		base, version = cur, cv
	}
	return nil, false, fmt.Errorf("the OAuth grant of %s kept changing while it was saved", ts.name)
}

// sameTokens reports whether cur holds the tokens of from, the grant a
// refresh started with, or none of that same authorization (they were
// refused to another replica that refreshed them too).
func sameTokens(cur, from *sb.OAuthGrant) bool {
	if !cur.AuthorizedAt.Equal(from.AuthorizedAt) || cur.Resource != from.Resource {
		return false
	}
	return cur.AccessToken == from.AccessToken && cur.RefreshToken == from.RefreshToken ||
		cur.AccessToken == "" && cur.RefreshToken == ""
}

// overwrite stores g as the server's grant whatever was stored (a client
// credentials token: any new one is as good). ts's turn is held.
func (ts *tokenSource) overwrite(ctx context.Context, g *sb.OAuthGrant) error {
	for range 4 {
		_, version, err := ts.o.load(ctx, ts.name)
		if err != nil && !errors.Is(err, sb.ErrOAuthSeal) {
			return err
		}
		v, err := ts.o.swap(ctx, ts.name, version, g)
		if err == nil {
			ts.set(g, v)
			return nil
		}
		if !errors.Is(err, sb.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("the OAuth grant of %s kept changing while it was saved", ts.name)
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
	return ts.o.update(ctx, ts.name, func(g *sb.OAuthGrant) {
		if usable(g) { // recorded already, or no grant: unchanged, so no write
			g.StepUp = unionScopes(g.StepUp, scopes)
		}
	})
}

// Transport returns the RoundTripper of a session of cfg's server: base's,
// with the server's access token on every request (see the top of the
// file). refused, if not nil, wraps the error of a request the server
// refused for lack of scopes (403 insufficient_scope, out of band): that
// request fails, and refused says how the caller's client is to take it
// (the connection stays).
func (o *Client) Transport(base http.RoundTripper, cfg *sb.ServerConfig, refused func(error) error) http.RoundTripper {
	return &oauthTransport{base: base, ts: o.source(cfg.Name), cfg: cfg, hc: o.httpClient(), refused: refused}
}

// Ready returns nil if a request to cfg's server can be sent with a token,
// refreshing one that is about to expire first; the token source's error
// otherwise (ErrAuthorizationRequired: a person must authorize it). In
// band (Fetcher set) a server of the authorization code grant is always
// ready: its first 401 authorizes.
func (o *Client) Ready(ctx context.Context, cfg *sb.ServerConfig) error {
	if o.Fetcher != nil && cfg.OAuth.EffectiveGrant() == sb.GrantAuthorizationCode {
		return nil
	}
	_, err := o.source(cfg.Name).token(ctx, cfg, cfg.URL, o.httpClient())
	return err
}

// StepUp returns the scopes a 403 of server asked for that the next
// authorization requests; none if there is no grant, or it cannot be read.
func (o *Client) StepUp(ctx context.Context, server string) []string {
	g, _, _ := o.load(ctx, server)
	if g == nil {
		return nil
	}
	return g.StepUp
}

// oauthTransport adds the server's access token to every request of a
// session (see the top of the file).
type oauthTransport struct {
	base    http.RoundTripper
	ts      *tokenSource
	cfg     *sb.ServerConfig
	hc      *http.Client // for the token endpoint: the session's address policy, no headers
	refused func(error) error
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tok, err := t.ts.token(ctx, t.cfg, req.URL.String(), t.hc)
	if err != nil && !errors.Is(err, ErrAuthorizationRequired) {
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
		if t.refused != nil {
			err = t.refused(err)
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && tok != "" {
		// The server refused a token we thought good (revoked, or expired
		// early): refresh once and retry. If the refresh token is refused
		// too, the retry fails with ErrAuthorizationRequired.
		t.ts.expire(tok)
		if retry, ok := rewound(req); ok {
			if tok, err = t.ts.token(ctx, t.cfg, retry.URL.String(), t.hc); err == nil {
				resp.Body.Close()
				return t.send(retry, tok)
			}
			if errors.Is(err, ErrAuthorizationRequired) {
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
		t.ts.refuse(fmt.Errorf("%w: %v", ErrAuthorizationFailed, err))
		return copyOf(), nil
	}
	tok, err := t.ts.token(req.Context(), t.cfg, retry.URL.String(), t.hc)
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
	if ts.handler != nil && ts.handlerURL == cfg.URL {
		return ts.handler, nil
	}
	h, err := ts.o.newHandler(cfg, hc, ts.o.RedirectURL, ts.o.Fetcher)
	if err != nil {
		return nil, err
	}
	ts.handler, ts.handlerURL = h, cfg.URL
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
