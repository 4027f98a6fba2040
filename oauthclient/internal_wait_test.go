package oauthclient

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
)

// hangingEndpoint is a token endpoint that never answers: a request to it
// ends only with its context.
type hangingEndpoint struct{}

func (hangingEndpoint) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// storeExpiring stores for server a grant whose access token has expired.
func storeExpiring(t *testing.T, o *Client, cfg *sb.ServerConfig) {
	t.Helper()
	g := &sb.OAuthGrant{Resource: cfg.URL, ClientID: "c", TokenURL: "http://127.0.0.1:9/token",
		AccessToken: "old", RefreshToken: "r", Expiry: time.Now().Add(-time.Second), AuthorizedAt: time.Now()}
	if _, err := o.swap(context.Background(), cfg.Name, 0, g); err != nil {
		t.Fatal(err)
	}
}

// Two requests find the token expired and the token endpoint does not
// answer: each waits refreshTimeout for its token, all told, the second
// counting its wait for the first one's refresh (before, the first waited
// for the HTTP client's 30 s and the second for 60 s: the two calls that
// hung for their full 60 s). Neither says "authorization required": the
// grant is kept for the next try.
func TestTokenWaitIsBoundedByTheRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &Client{Store: sqlitetest.Store(t), Key: oauthtest.Key(t)}
		cfg := &sb.ServerConfig{Name: "slow", Transport: sb.TransportStreamableHTTP, URL: "http://127.0.0.1:9/mcp", OAuth: &sb.OAuthConfig{}}
		storeExpiring(t, o, cfg)
		hc := &http.Client{Transport: hangingEndpoint{}, Timeout: 30 * time.Second} // as o.httpClient()
		ts := o.source(cfg.Name)
		var wg sync.WaitGroup
		waited := make([]time.Duration, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				start := time.Now()
				_, errs[i] = ts.token(context.Background(), cfg, cfg.URL, hc)
				waited[i] = time.Since(start)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil || errors.Is(err, ErrAuthorizationRequired) {
				t.Errorf("request %d: %v; want a failure that is not authorization required", i, err)
			}
			if waited[i] > refreshTimeout {
				t.Errorf("request %d waited %s for its token, more than the refresh's bound of %s", i, waited[i], refreshTimeout)
			}
		}
		if g, _, err := o.load(context.Background(), cfg.Name); err != nil || g.RefreshToken != "r" {
			t.Errorf("the stored grant after the timeouts: %+v, %v; want it kept", g, err)
		}
	})
}

// A request whose token expired while another replica holds the claim of
// its refresh, and died holding it, waits for that replica's tokens no
// longer than refreshTimeout, and fails saying why; once the claim has
// expired (it lasts refreshTimeout), the next request claims the refresh
// itself.
func TestDeadReplicasClaimHoldsUpARefreshBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := sqlitetest.Store(t)
		o := &Client{Store: st, Key: oauthtest.Key(t)}
		cfg := &sb.ServerConfig{Name: "orphan", Transport: sb.TransportStreamableHTTP, URL: "http://127.0.0.1:9/mcp", OAuth: &sb.OAuthConfig{}}
		storeExpiring(t, o, cfg)
		ctx := context.Background()
		if ok, err := st.ClaimOAuthRefresh(ctx, cfg.Name, "a replica that died", refreshTimeout); err != nil || !ok {
			t.Fatal(ok, err)
		}
		hc := &http.Client{Transport: hangingEndpoint{}}
		start := time.Now()
		_, err := o.source(cfg.Name).token(ctx, cfg, cfg.URL, hc)
		if !errors.Is(err, errRefreshTimeout) || time.Since(start) != refreshTimeout {
			t.Fatalf("after %s: %v; want %v after %s", time.Since(start), err, errRefreshTimeout, refreshTimeout)
		}
		if ok, err := st.ClaimOAuthRefresh(ctx, cfg.Name, o.holder(), refreshTimeout); err != nil || !ok {
			t.Fatalf("the dead replica's claim after %s: still held (%v, %v)", time.Since(start), ok, err)
		}
	})
}

// A token held fresh in memory is not handed out for a URL of another
// origin than the one it was granted for (scheme, host or port), whether
// the server's URL moved there or one request is headed there: it was,
// before the origin was checked, since the copy in memory was returned
// first.
func TestHeldTokenStaysWithItsOrigin(t *testing.T) {
	o := &Client{Store: sqlitetest.Store(t), Key: oauthtest.Key(t)}
	ctx := context.Background()
	cfg := &sb.ServerConfig{Name: "gh", Transport: sb.TransportStreamableHTTP, URL: "http://127.0.0.1:8001/mcp", OAuth: &sb.OAuthConfig{}}
	g := &sb.OAuthGrant{Resource: cfg.URL, AccessToken: "tok", Expiry: time.Now().Add(time.Hour)}
	if _, err := o.swap(ctx, cfg.Name, 0, g); err != nil {
		t.Fatal(err)
	}
	ts := o.source(cfg.Name)
	if tok, err := ts.token(ctx, cfg, cfg.URL+"?session=1", nil); err != nil || tok != "tok" {
		t.Fatalf("the token at its own origin: %q, %v", tok, err)
	}
	for _, elsewhere := range []string{"http://127.0.0.2:8001/mcp", "http://127.0.0.1:8002/mcp", "https://127.0.0.1:8001/mcp"} {
		moved := cfg.Clone()
		moved.URL = elsewhere
		if tok, err := ts.token(ctx, moved, elsewhere, nil); !errors.Is(err, ErrAuthorizationRequired) || tok != "" {
			t.Errorf("the server moved to %s: %q, %v; want no token, authorization required", elsewhere, tok, err)
		}
		if tok, err := ts.token(ctx, cfg, elsewhere, nil); !errors.Is(err, ErrAuthorizationRequired) || tok != "" {
			t.Errorf("a request of the server for %s: %q, %v; want no token, authorization required", elsewhere, tok, err)
		}
	}
}
