package upstream_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// clock is the OAuth client's clock: tests move it to make tokens expire
// without waiting.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }
func newOAuth(t *testing.T, st sb.OAuthStore, c *clock) *oauthclient.Client {
	return &oauthclient.Client{Store: st, Key: oauthtest.Key(t), Now: c.now}
}

// approve plays the person in the browser: opens the authorization URL,
// which the test authorization server approves at once, and hands the
// callback's parameters to Complete.
func approve(t *testing.T, o *oauthclient.Client, server, authURL string) {
	t.Helper()
	q := oauthtest.Approve(t, authURL).Query()
	if err := o.Complete(context.Background(), server, q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
}

// authorize runs an out-of-band authorization of cfg's server to the end.
func authorize(t *testing.T, o *oauthclient.Client, cfg *sb.ServerConfig) {
	t.Helper()
	u, err := o.Begin(context.Background(), cfg, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	approve(t, o, cfg.Name, u)
}

// reconnect restarts s and waits for its new connection.
func reconnect(t *testing.T, s *upstream.Session) {
	t.Helper()
	start := time.Now()
	s.Restart()
	waitFor(t, s, "a new connection", func(i sb.RuntimeInfo) bool {
		return i.Status == sb.StatusConnected && i.ConnectedSince != nil && i.ConnectedSince.After(start)
	})
}

func echo(ctx context.Context, s *upstream.Session) error {
	cs, err := s.Client(ctx)
	if err != nil {
		return err
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	return err
}

func waitAuthRequired(t *testing.T, s *upstream.Session, why string) sb.RuntimeInfo {
	t.Helper()
	info := waitFor(t, s, "authorization required", func(i sb.RuntimeInfo) bool {
		return i.Error != nil && i.Error.Code == sb.CodeAuthorizationRequired
	})
	e := info.Error
	if info.Status != sb.StatusError || e.Phase != sb.PhaseAuth || !strings.Contains(e.Message, "switchboard server auth oauthed") ||
		!strings.Contains(e.Message, why) {
		t.Fatalf("status %s, error %+v; want error in phase auth saying what to run and %q", info.Status, e, why)
	}
	// No retry storm: the next attempt is a slow retry, a minute away.
	if info.NextRetryAt == nil || time.Until(*info.NextRetryAt) < 40*time.Second {
		t.Fatalf("next retry at %v: want a slow retry", info.NextRetryAt)
	}
	return info
}

// TestOAuthLifecycle walks a server through everything OAuth does, over
// both HTTP transports, against a real authorization server: no grant
// (phase auth, no request sent), authorization code with PKCE and dynamic
// client registration, refresh before expiry (once for many concurrent
// calls), refresh token rotation surviving a restart, revocation back to
// "authorization required", and step-up on 403 insufficient_scope.
func TestOAuthLifecycle(t *testing.T) {
	for _, kind := range []sb.Transport{sb.TransportStreamableHTTP, sb.TransportSSE} {
		t.Run(string(kind), func(t *testing.T) {
			as := oauthtest.New(t)
			st := sqlitetest.Store(t)
			var c clock
			o := newOAuth(t, st, &c)
			path := "/mcp"
			if kind == sb.TransportSSE {
				path = "/sse"
			}
			cfg := &sb.ServerConfig{Name: "oauthed", Transport: kind, URL: as.URL + path, OAuth: &sb.OAuthConfig{}}
			s, rec := newSession(t, cfg, &upstream.Options{OAuth: o})
			ctx := context.Background()

			// Never authorized: phase auth, and not a single request.
			s.Start(ctx)
			waitAuthRequired(t, s, "")
			if n := as.MCPRequests(); n != 0 {
				t.Fatalf("%d requests reached the server before any authorization", n)
			}

			// Login.
			authorize(t, o, cfg)
			reconnect(t, s)
			if err := echo(ctx, s); err != nil {
				t.Fatal(err)
			}
			if st, _ := o.Status(ctx, "oauthed"); !st.Authorized || !slices.Contains(st.Scopes, "read") {
				t.Fatalf("status after login: %+v", st)
			}

			// Refresh before expiry, single flight: the token is about to
			// expire, and eight calls need it at once.
			c.advance(time.Hour - 30*time.Second) // within a minute of the expiry
			as.SetTTL(24 * time.Hour)             // the refreshed token is good for long
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Go(func() { errs <- echo(ctx, s) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := as.Refreshes(); n != 1 {
				t.Fatalf("%d refreshes for eight concurrent calls, want 1", n)
			}

			// Revocation: the server refuses the token, the refresh token is
			// refused too: back to "authorization required", not a loop.
			as.Revoke()
			s.Restart()
			waitAuthRequired(t, s, "refused the refresh token")
			authorize(t, o, cfg)
			reconnect(t, s)

			// Rotation: a refresh through s rotates the refresh token; a
			// restarted process refreshes with the rotated one it finds
			// stored (the authorization server took the old one back).
			as.SetTTL(48 * time.Hour)
			c.advance(24 * time.Hour) // the re-login token lives 24 h
			if err := echo(ctx, s); err != nil {
				t.Fatal(err)
			}
			c2 := &clock{}
			c2.advance(48*time.Hour - 30*time.Second)
			as.SetTTL(96 * time.Hour)
			o2 := newOAuth(t, st, c2)
			o2.Key = o.Key
			s2, _ := newSession(t, cfg, &upstream.Options{OAuth: o2})
			if err := s2.Start(ctx); err != nil {
				t.Fatalf("a restarted process with the rotated refresh token: %v", err)
			}
			if n := as.Refreshes(); n != 3 { // one before the revocation, two since
				t.Fatalf("%d refreshes, want 3", n)
			}
			s2.Shutdown(ctx)

			// Step-up: the server comes to require a scope the grant lacks.
			// Each call says what to run, and the connection stays (a
			// second call would find a broken one gone, and wait for the
			// reconnect).
			as.RequireScopes("read", "write")
			drops := rec.count(sb.ReasonDropped)
			for range 2 {
				_, err := s.CallTool(ctx, "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{})
				if sb.CodeOf(err) != sb.CodeUnavailable || sb.PhaseOf(err) != sb.PhaseAuth ||
					!strings.Contains(err.Error(), "more scopes: read write): run `switchboard server auth oauthed`") {
					t.Fatalf("a call without the required scope: %v (code %s, phase %s)", err, sb.CodeOf(err), sb.PhaseOf(err))
				}
			}
			if n := rec.count(sb.ReasonDropped) - drops; n != 0 {
				t.Fatalf("the connection dropped %d times on calls refused for their scopes; it was fine", n)
			}
			if st, _ := o.Status(ctx, "oauthed"); !slices.Contains(st.StepUp, "write") {
				t.Fatalf("step-up scopes not recorded: %+v", st)
			}
			authorize(t, o, cfg)
			req := as.Requested()
			if last := req[len(req)-1]; !slices.Contains(last, "write") || !slices.Contains(last, "read") {
				t.Fatalf("the authorization after a 403 asked for %v, want read and write", last)
			}
			reconnect(t, s)
			if err := echo(ctx, s); err != nil {
				t.Fatalf("call after step-up: %v", err)
			}
		})
	}
}

// TestOAuthClientCredentials connects a machine-to-machine server with no
// person involved, and gets a new token when the server drops the old one.
func TestOAuthClientCredentials(t *testing.T) {
	as := oauthtest.New(t)
	as.AddMachineClient("robot", "robot-secret-1")
	var c clock
	o := newOAuth(t, sqlitetest.Store(t), &c)
	cfg := &sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp",
		OAuth: &sb.OAuthConfig{Grant: sb.GrantClientCredentials, ClientID: "robot", ClientSecret: "robot-secret-1"}}
	s, _ := newSession(t, cfg, &upstream.Options{OAuth: o})
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	as.ExpireAccessTokens()
	if err := echo(ctx, s); err != nil {
		t.Fatalf("call after the server dropped the token: %v", err)
	}
	if st, _ := o.Status(ctx, "oauthed"); !st.Authorized {
		t.Fatalf("status %+v", st)
	}

	// A wrong secret is an authorization failure, not a person's job.
	cfg2 := *cfg
	cfg2.Name, cfg2.OAuth = "wrong", &sb.OAuthConfig{Grant: sb.GrantClientCredentials, ClientID: "robot", ClientSecret: "nope"}
	s2, _ := newSession(t, &cfg2, &upstream.Options{OAuth: o})
	s2.Start(ctx)
	info := s2.Info()
	if info.Error == nil || info.Error.Code != sb.CodeAuthorizationFailed || info.Error.Phase != sb.PhaseAuth {
		t.Fatalf("wrong secret: %+v", info.Error)
	}
}

// TestOAuthDeclinedAndStaleCallbacks: a person who declines ends the flow
// with the authorization server's error; a callback for no flow (replayed,
// or forged) is refused.
func TestOAuthDeclinedAndStaleCallbacks(t *testing.T) {
	as := oauthtest.New(t)
	var c clock
	o := newOAuth(t, sqlitetest.Store(t), &c)
	cfg := &sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()
	u, err := o.Begin(ctx, cfg, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := url.Parse(u)
	state := p.Query().Get("state")
	if err := o.Complete(ctx, "oauthed", state, "", "", "access_denied"); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("declined: %v", err)
	}
	st, _ := o.Status(ctx, "oauthed")
	if st.Authorized || st.Pending || st.Last == nil || st.Last.Error == "" {
		t.Fatalf("status after declining: %+v", st)
	}
	for _, s := range []string{state, "forged"} {
		if err := o.Complete(ctx, "oauthed", s, "code", "", ""); err == nil || sb.CodeOf(err) != sb.CodeAuthorizationFailed {
			t.Fatalf("callback with state %q: %v", s, err)
		}
	}
}

// TestOAuthHintWithoutOAuthBlock: a server that requires OAuth, configured
// without an "oauth" block, fails with what to add.
func TestOAuthHintWithoutOAuthBlock(t *testing.T) {
	as := oauthtest.New(t)
	cfg := &sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp"}
	s, _ := newSession(t, cfg, nil)
	s.Start(context.Background())
	e := s.Info().Error
	if e == nil || e.Phase != sb.PhaseAuth || e.Code != sb.HTTPStatus(401) ||
		!strings.Contains(e.Message, "switchboard server edit oauthed --oauth") {
		t.Fatalf("error %+v: want phase auth, http_401, and the hint", e)
	}
}

// TestOAuthReusesRegisteredClient: the client Switchboard registers is
// stored with the grant and reused by later authorizations, by this
// process and by another on the same store; one the authorization server
// forgot (invalid_client, on a refresh or on the code's exchange) puts the
// server back in phase auth, without a loop, and the next authorization
// registers a new one.
func TestOAuthReusesRegisteredClient(t *testing.T) {
	as := oauthtest.New(t)
	st := sqlitetest.Store(t)
	var c clock
	o := newOAuth(t, st, &c)
	cfg := &sb.ServerConfig{Name: "oauthed", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()

	authorize(t, o, cfg)
	authorize(t, o, cfg)
	o2 := newOAuth(t, st, &c) // another process
	o2.Key = o.Key
	authorize(t, o2, cfg)
	if n := as.Registrations(); n != 1 {
		t.Fatalf("%d registrations for three authorizations, want 1", n)
	}

	// Forgotten, found out at a refresh.
	as.ForgetClients()
	c.advance(time.Hour) // the access token has expired: the session refreshes
	s, _ := newSession(t, cfg, &upstream.Options{OAuth: o})
	s.Start(ctx)
	waitAuthRequired(t, s, "no longer knows the client")
	if n, r := as.Registrations(), as.Refreshes(); n != 1 || r != 0 {
		t.Fatalf("%d registrations, %d refreshes after invalid_client; want 1, 0", n, r)
	}
	authorize(t, o, cfg)
	if n := as.Registrations(); n != 2 {
		t.Fatalf("%d registrations after the client was forgotten, want 2", n)
	}
	reconnect(t, s)

	// Forgotten between the approval and the code's exchange.
	u, err := o.Begin(ctx, cfg, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	q := oauthtest.Approve(t, u).Query()
	as.ForgetClients()
	if err := o.Complete(ctx, cfg.Name, q.Get("state"), q.Get("code"), "", ""); sb.CodeOf(err) != sb.CodeAuthorizationFailed ||
		!strings.Contains(err.Error(), "no longer knows the client") {
		t.Fatalf("the exchange with a forgotten client: %v", err)
	}
	authorize(t, o, cfg)
	if n := as.Registrations(); n != 3 {
		t.Fatalf("%d registrations, want 3", n)
	}
}
