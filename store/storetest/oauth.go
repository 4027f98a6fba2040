package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
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

// testOAuthGrantVersions checks the compare-and-swap of grants: a swap at
// the version a store read writes once, through whichever store; one made
// from an older read, or over a grant deleted meanwhile, fails with
// ErrConflict and leaves the stored grant alone; of writers racing at one
// version, one wins. A refresh that lost a race can so never store its
// empty tokens over the winner's.
func testOAuthGrantVersions(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	a, b := oauthStores(t, open)
	if _, _, err := a.LoadOAuthGrantVersion(ctx, "gh"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("load before any write: %v, want ErrNotFound", err)
	}
	if v, err := a.SwapOAuthGrant(ctx, "gh", 0, []byte{1}); err != nil || v != 1 {
		t.Fatalf("create by swap at version 0 = %d, %v; want version 1", v, err)
	}
	if _, err := b.SwapOAuthGrant(ctx, "gh", 0, []byte{2}); !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("a second create: %v, want ErrConflict", err)
	}
	if v, err := b.SwapOAuthGrant(ctx, "gh", 1, []byte{3}); err != nil || v != 2 {
		t.Fatalf("swap at version 1 = %d, %v; want version 2", v, err)
	}
	if _, err := a.SwapOAuthGrant(ctx, "gh", 1, []byte{0}); !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("swap from an older read: %v, want ErrConflict", err)
	}
	wantGrant := func(sealed []byte, version int64) {
		t.Helper()
		got, v, err := a.LoadOAuthGrantVersion(ctx, "gh")
		if err != nil || !bytes.Equal(got, sealed) || v != version {
			t.Fatalf("stored = %v at version %d, %v; want %v at version %d", got, v, err, sealed, version)
		}
	}
	wantGrant([]byte{3}, 2)
	if err := a.SaveOAuthGrant(ctx, "gh", []byte{4}); err != nil { // an unconditional save moves the version too
		t.Fatal(err)
	}
	wantGrant([]byte{4}, 3)
	if _, err := b.SwapOAuthGrant(ctx, "gh", 2, []byte{0}); !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("swap from before a save: %v, want ErrConflict", err)
	}

	const n = 10
	stores := []switchboard.OAuthStore{a, b}
	errs := race(n, func(i int) error {
		_, err := stores[i%2].SwapOAuthGrant(ctx, "gh", 3, []byte{byte(10 + i)})
		return err
	})
	ok, conflicts := count(t, errs, switchboard.ErrConflict)
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d swaps at one version succeeded and %d conflicted; want 1 and %d", ok, conflicts, n-1)
	}
	winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
	wantGrant([]byte{byte(10 + winner)}, 4)

	if err := b.DeleteOAuthGrant(ctx, "gh"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SwapOAuthGrant(ctx, "gh", 4, []byte{0}); !errors.Is(err, switchboard.ErrConflict) {
		t.Fatalf("swap over a deleted grant: %v, want ErrConflict (a forgotten grant stays forgotten)", err)
	}
	if _, _, err := a.LoadOAuthGrantVersion(ctx, "gh"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Fatalf("load after the refused swap: %v, want ErrNotFound", err)
	}
}

// testOAuthRefreshClaims checks the claims of refreshes: one holder at a
// time per server, whichever store it claims through; its holder may
// claim again (and no one else) until it releases the claim or the claim
// expires; another holder's release ends nothing; of holders racing, one
// gets it.
func testOAuthRefreshClaims(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	a, b := oauthStores(t, open)
	claim := func(st switchboard.OAuthStore, server, holder string, ttl time.Duration, want bool) {
		t.Helper()
		got, err := st.ClaimOAuthRefresh(ctx, server, holder, ttl)
		if err != nil || got != want {
			t.Fatalf("%s claims %s: %v, %v; want %v", holder, server, got, err, want)
		}
	}
	claim(a, "gh", "r1", time.Minute, true)
	claim(b, "gh", "r2", time.Minute, false)
	claim(b, "other", "r2", time.Minute, true) // another server's refresh is another claim
	claim(a, "gh", "r1", time.Minute, true)    // its holder's again
	if err := b.ReleaseOAuthRefresh(ctx, "gh", "r2"); err != nil {
		t.Fatal(err)
	}
	claim(b, "gh", "r2", time.Minute, false) // r2's release of r1's claim ended nothing
	if err := a.ReleaseOAuthRefresh(ctx, "gh", "r1"); err != nil {
		t.Fatal(err)
	}
	claim(b, "gh", "r2", time.Minute, true)
	if err := b.ReleaseOAuthRefresh(ctx, "gh", "r2"); err != nil {
		t.Fatal(err)
	}

	// A claim whose time has passed (a holder that died) is taken over.
	claim(a, "gh", "dead", -time.Second, true)
	claim(b, "gh", "r2", time.Minute, true)
	claim(a, "gh", "dead", time.Minute, false)

	const n = 10
	stores := []switchboard.OAuthStore{a, b}
	got := make([]bool, n)
	errs := race(n, func(i int) (err error) {
		got[i], err = stores[i%2].ClaimOAuthRefresh(ctx, "raced", fmt.Sprint("holder-", i), time.Minute)
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	if won := len(slices.DeleteFunc(got, func(b bool) bool { return !b })); won != 1 {
		t.Fatalf("%d of %d racing holders got the claim, want 1", won, n)
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
