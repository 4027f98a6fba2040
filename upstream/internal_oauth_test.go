package upstream

import (
	"context"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
)

// TestRefreshRaceBetweenReplicas: two replicas find the token expiring and
// refresh with the same refresh token; the authorization server rotates it
// for the first, and refuses it to the second. The second must take the
// grant the first stored, not forget the server's authorization.
func TestRefreshRaceBetweenReplicas(t *testing.T) {
	as := oauthtest.New(t)
	o := &OAuth{Store: sqlitetest.Store(t), Key: oauthtest.Key(t)}
	cfg := &sb.ServerConfig{Name: "raced", Transport: sb.TransportStreamableHTTP, URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}
	ctx := context.Background()

	// Log in.
	u, err := o.Begin(ctx, cfg, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	q := oauthtest.Approve(t, u).Query()
	if err := o.Complete(ctx, cfg.Name, q.Get("state"), q.Get("code"), "", ""); err != nil {
		t.Fatal(err)
	}

	stale, err := o.load(ctx, cfg.Name) // what both replicas read
	if err != nil || stale == nil {
		t.Fatal(stale, err)
	}
	ts := o.source(cfg.Name)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	first, err := ts.refresh(ctx, stale, o.client()) // the first replica: rotates
	if err != nil {
		t.Fatal(err)
	}
	second, err := ts.refresh(ctx, stale, o.client()) // the second, with the spent refresh token
	if err != nil || second != first {
		t.Fatalf("the second replica's refresh: %q, %v; want the first one's token %q", second, err, first)
	}
	if g, _ := o.load(ctx, cfg.Name); !usable(g) {
		t.Fatalf("the grant was forgotten: %+v", g)
	}
}
