package oauthclient

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
)

// logIn authorizes cfg's server out of band (Begin, the test
// authorization server's approval, Complete).
func logIn(t *testing.T, o *Client, cfg *sb.ServerConfig) {
	t.Helper()
	u, err := o.Begin(context.Background(), cfg, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	q := oauthtest.Approve(t, u).Query()
	if err := o.Complete(context.Background(), cfg.Name, q.Get("state"), q.Get("code"), "", ""); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshRaceBetweenReplicas: two replicas find the token expiring and
// refresh with the same refresh token; the authorization server rotates it
// for the first, and refuses it to the second. The second must take the
// grant the first stored, not forget the server's authorization.
func TestRefreshRaceBetweenReplicas(t *testing.T) {
	as := oauthtest.New(t)
	o := &Client{Store: sqlitetest.Store(t), Key: oauthtest.Key(t)}
	cfg := &sb.ServerConfig{Name: "raced", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()

	logIn(t, o, cfg)

	stale, version, err := o.load(ctx, cfg.Name) // what both replicas read
	if err != nil || stale == nil {
		t.Fatal(stale, err)
	}
	ts := o.source(cfg.Name)
	if err := ts.take(ctx); err != nil {
		t.Fatal(err)
	}
	defer ts.give()
	first, err := ts.refresh(ctx, stale, version, o.httpClient()) // the first replica: rotates
	if err != nil {
		t.Fatal(err)
	}
	second, err := ts.refresh(ctx, stale, version, o.httpClient()) // the second, with the spent refresh token
	if err != nil || second != first {
		t.Fatalf("the second replica's refresh: %q, %v; want the first one's token %q", second, err, first)
	}
	if g, _, _ := o.load(ctx, cfg.Name); !usable(g) {
		t.Fatalf("the grant was forgotten: %+v", g)
	}
}

// saveHook is an OAuth store that calls onSaved after each grant it
// swaps in.
type saveHook struct {
	sb.OAuthStore
	onSaved func()
}

func (s *saveHook) SwapOAuthGrant(ctx context.Context, server string, version int64, sealed []byte) (int64, error) {
	v, err := s.OAuthStore.SwapOAuthGrant(ctx, server, version, sealed)
	s.onSaved()
	return v, err
}

// TestInBandGrantSavedUnderTheLock: an in-band authorization stores its
// grant as the token source's refreshes do, under the token source's
// lock. Were the save outside it, a refresh that had read the older grant
// before the save (and holds the lock while it asks the token endpoint)
// would store the older authorization's tokens over the new ones once the
// save is done (a step-up's scopes lost, replicas and restarts reading
// tokens this process no longer uses). The store's hook, called once the
// in-band grant is saved, replays that refresh in the gap if there is one
// (the lock is free there); if the save holds the lock, a refresh can only
// start after it, and then finds the new grant.
func TestInBandGrantSavedUnderTheLock(t *testing.T) {
	as := oauthtest.New(t)
	st := &saveHook{OAuthStore: sqlitetest.Store(t), onSaved: func() {}}
	fetch := func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		q := oauthtest.Approve(t, args.URL).Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
	o := &Client{Store: st, Key: oauthtest.Key(t), Fetcher: fetch, RedirectURL: "http://127.0.0.1:9/callback"}
	cfg := &sb.ServerConfig{Name: "raced", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()
	hc := o.httpClient()

	// The older grant, authorized out of band; its access token is then
	// refused (401), so that the next token request refreshes it.
	logIn(t, o, cfg)
	older, olderVersion, err := o.load(ctx, cfg.Name)
	if err != nil || older == nil {
		t.Fatal(older, err)
	}
	ts := o.source(cfg.Name)
	ts.expire(older.AccessToken)

	// The in-band authorization, answering a real 401.
	resp, err := hc.Post(cfg.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the server answered %d without a token, want 401", resp.StatusCode)
	}
	h, err := ts.inBandHandler(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	var (
		competing sync.WaitGroup
		refreshed string
		rerr      error
	)
	st.onSaved = func() {
		st.onSaved = func() {} // once: the in-band grant's save
		select {
		case ts.turn <- struct{}{}:
			// The gap is open: the refresh that read the older grant
			// before the save finishes in it.
			refreshed, rerr = ts.refresh(ctx, older, olderVersion, hc)
			ts.give()
			return
		default:
		}
		competing.Go(func() { refreshed, rerr = ts.token(ctx, cfg, cfg.URL, hc) })
	}
	if err := h.Authorize(ctx, resp.Request, resp); err != nil {
		t.Fatal(err)
	}
	competing.Wait()
	if rerr != nil {
		t.Fatal(rerr)
	}
	src, err := h.TokenSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inBand, err := src.Token()
	if err != nil {
		t.Fatal(err)
	}

	stored, _, err := o.load(ctx, cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	kept := ts.grant
	ts.mu.Unlock()
	if stored.AccessToken != inBand.AccessToken || kept.AccessToken != inBand.AccessToken || refreshed != inBand.AccessToken {
		t.Fatalf("after an in-band authorization raced a refresh of the older grant: stored %q, kept %q, handed out %q; want the in-band token %q everywhere",
			stored.AccessToken, kept.AccessToken, refreshed, inBand.AccessToken)
	}
	if n := as.Refreshes(); n != 0 {
		t.Errorf("%d refreshes of the older grant after the newer one was saved", n)
	}
}

// An in-band authorization keeps what the out-of-band one keeps: the
// client Switchboard registered, for the next authorization out of band,
// and when a person authorized, which restarts sessions waiting for it
// (registry/oauth.go).
func TestInBandGrantKeepsTheRegisteredClient(t *testing.T) {
	as := oauthtest.New(t)
	fetch := func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		q := oauthtest.Approve(t, args.URL).Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
	o := &Client{Store: sqlitetest.Store(t), Key: oauthtest.Key(t), Fetcher: fetch, RedirectURL: "http://127.0.0.1:9/callback"}
	cfg := &sb.ServerConfig{Name: "kept", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()
	hc := o.httpClient()

	logIn(t, o, cfg)
	older, _, err := o.load(ctx, cfg.Name)
	if err != nil || older == nil || older.Registered == nil {
		t.Fatalf("after the out-of-band authorization: %+v, %v; want a grant with the client Switchboard registered", older, err)
	}
	resp, err := hc.Post(cfg.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the server answered %d without a token, want 401", resp.StatusCode)
	}
	h, err := o.source(cfg.Name).inBandHandler(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Authorize(ctx, resp.Request, resp); err != nil {
		t.Fatal(err)
	}
	g, _, err := o.load(ctx, cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if g.AccessToken == older.AccessToken {
		t.Fatal("the in-band authorization stored no new grant")
	}
	if g.Registered == nil || g.Registered.ClientID != older.Registered.ClientID {
		t.Errorf("the in-band grant's registered client is %+v, want the one registered before (%s)", g.Registered, older.Registered.ClientID)
	}
	if !g.AuthorizedAt.After(older.AuthorizedAt) {
		t.Errorf("the in-band grant was authorized at %v, not after the older one (%v)", g.AuthorizedAt, older.AuthorizedAt)
	}
}
