package registry_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// waitInfo waits, up to 30 s (half the slow retry of phase auth), for the
// session of name on r to satisfy pred.
func waitInfo(t *testing.T, r *registrytest.Replica, name, what string, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
	t.Helper()
	var s *upstream.Session
	eventually(t, name+" runs", func() bool { s, _ = r.Registry.Session(name); return s != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := s.WaitFor(ctx, pred)
	if err != nil {
		t.Fatalf("%s: %v (last %+v)", what, err, s.Info())
	}
	return info
}

// An authorization begun on one replica is completed by a callback that
// lands on another (the flow is in the database, not in the memory of the
// replica that began it), once; and the first replica's session, waiting
// in phase auth, connects as soon as the grant is announced, not at its
// next slow retry.
func TestOAuthAcrossReplicas(t *testing.T) {
	as := oauthtest.New(t)
	dsn := pgtest.NewDatabase(t)
	key := oauthtest.Key(t)
	a, b := registrytest.StartOAuthReplica(t, dsn, key), registrytest.StartOAuthReplica(t, dsn, key)
	ctx := context.Background()
	cfg := &sb.ServerConfig{Name: "gh", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	if _, err := a.Registry.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	waiting := waitInfo(t, a, "gh", "phase auth on a", waitingInAuth)
	waitInfo(t, b, "gh", "phase auth on b", waitingInAuth)
	if waiting.NextRetryAt == nil {
		t.Fatalf("a waits with no retry planned: %+v", waiting)
	}

	// Begin on a; the browser is sent to the callback, which reaches b.
	authURL, err := a.OAuth.Begin(ctx, cfg, "http://127.0.0.1:9/api/v1/servers/gh/oauth/callback")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.OAuth.Status(ctx, "gh"); err != nil || !st.Pending {
		t.Fatalf("b's status of a flow begun on a: %+v, %v; want pending", st, err)
	}
	q := oauthtest.Approve(t, authURL).Query()
	if err := b.OAuth.Complete(ctx, "gh", q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error")); err != nil {
		t.Fatalf("the callback on b: %v", err)
	}
	if err := b.Registry.Restart("gh"); err != nil { // as b's callback route does
		t.Fatal(err)
	}
	// a, polled by `server auth` that began there, sees the outcome.
	if st, err := a.OAuth.Status(ctx, "gh"); err != nil || st.Pending || !st.Authorized || st.Last == nil || st.Last.Error != "" {
		t.Fatalf("a's status after b's callback: %+v, %v; want authorized, not pending, with a last success", st, err)
	}
	// Replayed (on either replica): the flow was taken.
	for _, r := range []*registrytest.Replica{a, b} {
		if err := r.OAuth.Complete(ctx, "gh", q.Get("state"), q.Get("code"), "", ""); sb.CodeOf(err) != sb.CodeAuthorizationFailed {
			t.Fatalf("a replayed callback: %v, want authorization_failed", err)
		}
	}

	connected := func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }
	waitInfo(t, b, "gh", "b connects after its callback", connected)
	info := waitInfo(t, a, "gh", "a connects after b's callback", connected)
	if info.ConnectedSince == nil || !info.ConnectedSince.Before(*waiting.NextRetryAt) {
		t.Fatalf("a connected at %v, its slow retry was due at %v: it waited for the retry", info.ConnectedSince, waiting.NextRetryAt)
	}
}

func waitingInAuth(i sb.RuntimeInfo) bool {
	return i.Status == sb.StatusError && i.Error != nil && i.Error.Phase == sb.PhaseAuth
}

// elsewhere is a second MCP server, with no OAuth, on another loopback
// address than the authorization server's: where a server's URL is moved.
// It counts the requests that carry an Authorization header.
type elsewhere struct {
	URL      string
	requests atomic.Int64
	bearer   atomic.Int64
}

func newElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	srv, err := testserver.NewInProcess(testserver.Options{Name: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(*http.Request) *mcp.Server { return srv }
	e := &elsewhere{}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", mcp.NewSSEHandler(get, nil))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			e.bearer.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	e.URL = hs.URL
	return e
}

// A server authorized at one address whose URL is then changed to another
// host (127.0.0.2 here): the new host never receives its token, neither
// from the replica the change was made through nor from the one it syncs
// to, though both held the token, fresh, for the old address. The stored
// tokens are dropped, and the server waits on both in phase auth for an
// authorization at its new address. On both HTTP transports.
func TestOAuthTokenStaysWithItsOrigin(t *testing.T) {
	for _, tc := range []struct {
		kind sb.Transport
		path string
	}{{sb.TransportStreamableHTTP, "/mcp"}, {sb.TransportSSE, "/sse"}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			as := oauthtest.New(t)
			other := newElsewhere(t)
			dsn := pgtest.NewDatabase(t)
			key := oauthtest.Key(t)
			a, b := registrytest.StartOAuthReplica(t, dsn, key), registrytest.StartOAuthReplica(t, dsn, key)
			ctx := context.Background()
			cfg := &sb.ServerConfig{Name: "gh", Transport: tc.kind, URL: as.URL + tc.path, OAuth: &sb.OAuthConfig{}}
			if _, err := a.Registry.Create(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			waitInfo(t, a, "gh", "phase auth on a", waitingInAuth)
			waitInfo(t, b, "gh", "phase auth on b", waitingInAuth)
			authURL, err := a.OAuth.Begin(ctx, cfg, "http://127.0.0.1:9/api/v1/servers/gh/oauth/callback")
			if err != nil {
				t.Fatal(err)
			}
			q := oauthtest.Approve(t, authURL).Query()
			if err := a.OAuth.Complete(ctx, "gh", q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error")); err != nil {
				t.Fatal(err)
			}
			if err := a.Registry.Restart("gh"); err != nil { // as the callback route does
				t.Fatal(err)
			}
			connected := func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }
			for _, r := range []*registrytest.Replica{a, b} {
				waitInfo(t, r, "gh", "connected with the token", connected)
				if _, err := session(t, r).CallTool(ctx, "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			moved := cfg.Clone()
			moved.URL = other.URL + tc.path
			if _, err := a.Registry.Update(ctx, "gh", moved, 0); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*registrytest.Replica{a, b} {
				var info sb.RuntimeInfo
				eventually(t, "the session at the new address settles", func() bool {
					s, ok := r.Registry.Session("gh")
					if !ok || s == nil || s.Config().URL != moved.URL {
						return false
					}
					info = s.Info()
					return connected(info) || waitingInAuth(info)
				})
				if n := other.bearer.Load(); n != 0 {
					t.Fatalf("%d requests to the new address carried an Authorization header (of %d requests; session %s)",
						n, other.requests.Load(), info.Status)
				}
				if !waitingInAuth(info) || info.Error.Code != sb.CodeAuthorizationRequired ||
					!strings.Contains(info.Error.Message, "switchboard server auth gh") {
					t.Fatalf("the session at the new address: %+v; want phase auth, authorization required", info)
				}
				if st, err := r.OAuth.Status(ctx, "gh"); err != nil || st.Authorized {
					t.Fatalf("status after the move: %+v, %v; want the old address's tokens dropped", st, err)
				}
			}
			if n := other.requests.Load(); n != 0 {
				t.Errorf("%d requests reached the new address before any authorization there", n)
			}
		})
	}
}

// session returns the session of gh on r.
func session(t *testing.T, r *registrytest.Replica) *upstream.Session {
	t.Helper()
	s, ok := r.Registry.Session("gh")
	if !ok || s == nil {
		t.Fatal("gh runs no session")
	}
	return s
}

// Three replicas on one PostgreSQL database call a server whose
// authorization server rotates refresh tokens (a spent one is refused with
// invalid_grant) and issues access tokens that live 2 s (less than the
// refresh margin of a minute: nearly every call refreshes); and every other
// round of calls the test ends every access token early, so that all three
// replicas find theirs refused (401) at once and refresh together. The
// refresh is single-flight across them: the authorization server never
// sees a spent refresh token, no replica falls back to "authorization
// required", no call fails or times out, and the server stays connected
// and authorized on all three.
func TestOAuthRefreshSingleFlightAcrossReplicas(t *testing.T) {
	as := oauthtest.New(t)
	as.SetTTL(2 * time.Second)
	dsn := pgtest.NewDatabase(t)
	key := oauthtest.Key(t)
	var rs []*registrytest.Replica
	for range 3 {
		rs = append(rs, registrytest.StartOAuthReplica(t, dsn, key))
	}
	ctx := context.Background()
	cfg := &sb.ServerConfig{Name: "gh", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{},
		CallTimeoutMS: 20_000} // a call stuck at a refresh fails as timed out, well before the default 60 s
	if _, err := rs[0].Registry.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		waitInfo(t, r, "gh", "phase auth", waitingInAuth)
	}
	authURL, err := rs[0].OAuth.Begin(ctx, cfg, "http://127.0.0.1:9/api/v1/servers/gh/oauth/callback")
	if err != nil {
		t.Fatal(err)
	}
	q := oauthtest.Approve(t, authURL).Query()
	if err := rs[0].OAuth.Complete(ctx, "gh", q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error")); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].Registry.Restart("gh"); err != nil {
		t.Fatal(err)
	}
	connected := func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }
	for _, r := range rs {
		waitInfo(t, r, "gh", "connected", connected)
	}

	const (
		rounds  = 12
		workers = 2 // per replica
		calls   = 10
	)
	var (
		mu                           sync.Mutex
		authRequired, timedOut, fail int
		firstErr                     error
	)
	for round := range rounds {
		if round%2 == 1 {
			as.ExpireAccessTokens()
		}
		var wg sync.WaitGroup
		for _, r := range rs {
			for range workers {
				wg.Go(func() {
					for range calls {
						s, ok := r.Registry.Session("gh")
						if !ok || s == nil {
							t.Error("gh runs no session")
							return
						}
						_, err := s.CallTool(ctx, "echo", map[string]any{"text": "hi"}, sb.InvokeOptions{})
						if err == nil {
							continue
						}
						mu.Lock()
						switch {
						case sb.CodeOf(err) == sb.CodeAuthorizationRequired || sb.PhaseOf(err) == sb.PhaseAuth:
							authRequired++
						case sb.CodeOf(err) == sb.CodeTimeout || errors.Is(err, context.DeadlineExceeded):
							timedOut++
						default:
							fail++
						}
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
	}
	t.Logf("%d calls on 3 replicas: %d refreshes, %d refused refresh tokens", rounds*3*workers*calls, as.Refreshes(), as.RefusedRefreshes())
	if authRequired+timedOut+fail > 0 {
		t.Errorf("%d calls fell back to authorization required, %d timed out, %d failed otherwise; the first: %v",
			authRequired, timedOut, fail, firstErr)
	}
	if n := as.RefusedRefreshes(); n != 0 {
		t.Errorf("the authorization server refused %d spent refresh tokens: replicas refreshed with the same one", n)
	}
	if n := as.Refreshes(); n < rounds/2 {
		t.Errorf("%d refreshes for %d rounds that ended every access token: the test did not refresh", n, rounds/2)
	}
	for i, r := range rs {
		if info := session(t, r).Info(); !connected(info) {
			t.Errorf("replica %d: %s, %+v; want connected", i, info.Status, info.Error)
		}
		if st, err := r.OAuth.Status(ctx, "gh"); err != nil || !st.Authorized {
			t.Errorf("replica %d's status: %+v, %v; want authorized", i, st, err)
		}
	}
}
