package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/switchboard-mcp/switchboard"
)

// testOAuthGrants checks the store's OAuthStore: a grant saved through one
// Store is read through another (replicas share tokens), a save replaces,
// and a delete forgets.
func testOAuthGrants(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	a, ok := mustOpen(t, open).(switchboard.OAuthStore)
	if !ok {
		t.Skip("the store keeps no OAuth grants")
	}
	b := mustOpen(t, open).(switchboard.OAuthStore)
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
