package registry_test

import (
	"context"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
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
