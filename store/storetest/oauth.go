package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// testOAuthGrants checks the store's OAuthStore: a grant saved through one
// Store is read through another (replicas share tokens), a save replaces,
// and a delete forgets.
func testOAuthGrants(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	a, b := oauthStores(t, open)
	if _, err := a.LoadOAuthGrant(ctx, "gh"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("load before save: %v, want ErrNotFound", err)
	}
	for _, sealed := range [][]byte{{1, 2, 3, 0, 255}, {9}} {
		if err := a.SaveOAuthGrant(ctx, "gh", sealed); err != nil {
			t.Fatal(err)
		}
		got, err := b.LoadOAuthGrant(ctx, "gh")
		if err != nil || !bytes.Equal(got, sealed) {
			t.Fatalf("load through another store = %v, %v; want %v", got, err, sealed)
		}
	}
	if _, err := b.LoadOAuthGrant(ctx, "other"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("another server's grant: %v, want ErrNotFound", err)
	}
	for range 2 { // deleting what is gone is not an error
		if err := b.DeleteOAuthGrant(ctx, "gh"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.LoadOAuthGrant(ctx, "gh"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("load after delete: %v, want ErrNotFound", err)
	}
}

// testOAuthPending checks the authorizations waiting for their callback:
// one saved through one Store is taken through another (the callback may
// reach any replica), once; an expired one is not taken, and is dropped
// by the next save.
func testOAuthPending(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	a, b := oauthStores(t, open)
	if err := a.SaveOAuthPending(ctx, "old", "gh", []byte{7}, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if pending, err := b.OAuthPending(ctx, "gh"); err != nil || pending {
		t.Fatalf("pending with only an expired flow = %v, %v; want false", pending, err)
	}
	if err := a.SaveOAuthPending(ctx, "id1", "gh", []byte{1, 0, 255}, time.Now().Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if pending, err := b.OAuthPending(ctx, "gh"); err != nil || !pending {
		t.Fatalf("pending = %v, %v; want true", pending, err)
	}
	if pending, err := b.OAuthPending(ctx, "other"); err != nil || pending {
		t.Fatalf("another server pending = %v, %v; want false", pending, err)
	}
	if _, _, err := b.TakeOAuthPending(ctx, "old"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("take an expired flow: %v, want ErrNotFound", err)
	}
	server, sealed, err := b.TakeOAuthPending(ctx, "id1")
	if err != nil || server != "gh" || !bytes.Equal(sealed, []byte{1, 0, 255}) {
		t.Fatalf("take = %q, %v, %v", server, sealed, err)
	}
	if _, _, err := a.TakeOAuthPending(ctx, "id1"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("take twice: %v, want ErrNotFound", err)
	}
	if pending, err := a.OAuthPending(ctx, "gh"); err != nil || pending {
		t.Fatalf("pending after take = %v, %v; want false", pending, err)
	}
}

// testOAuthFeed checks that every write of a grant is announced.
func testOAuthFeed(t *testing.T, open OpenFunc) {
	w, b := oauthStores(t, open)
	feed, ok := b.(switchboard.ChangeFeed)
	if !ok {
		t.Skip("the store has no change feed (optional)")
	}
	ctx := context.Background()
	next := watchFeed(t, feed)
	for _, sealed := range [][]byte{{1}, {2}} {
		if err := w.SaveOAuthGrant(ctx, "gh", sealed); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.DeleteOAuthGrant(ctx, "gh"); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, next,
		switchboard.Change{Kind: switchboard.ChangeOAuth, Name: "gh", Version: 1},
		switchboard.Change{Kind: switchboard.ChangeOAuth, Name: "gh", Version: 1},
		switchboard.Change{Kind: switchboard.ChangeOAuth, Name: "gh", Version: 0})
}

// oauthStores opens two Stores of one database as OAuthStores, and skips
// the test if the store keeps no OAuth grants.
func oauthStores(t *testing.T, open OpenFunc) (a, b switchboard.OAuthStore) {
	t.Helper()
	s := twoStores(t, open)
	a, ok := s[0].(switchboard.OAuthStore)
	if !ok {
		t.Skip("the store keeps no OAuth grants")
	}
	return a, s[1].(switchboard.OAuthStore)
}
