package storetest

import (
	"context"
	"crypto/sha256"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// The toolset and token tests run on a store that implements
// [switchboard.ToolsetStore] and [switchboard.TokenStore] (both of ours
// do); they fail on one that does not, so that a store cannot lose them
// unnoticed.

func toolsets(t *testing.T, open OpenFunc) switchboard.ToolsetStore {
	t.Helper()
	s, ok := mustOpen(t, open).(switchboard.ToolsetStore)
	if !ok {
		t.Fatal("the store does not implement switchboard.ToolsetStore")
	}
	return s
}

func tokens(t *testing.T, open OpenFunc) switchboard.TokenStore {
	t.Helper()
	s, ok := mustOpen(t, open).(switchboard.TokenStore)
	if !ok {
		t.Fatal("the store does not implement switchboard.TokenStore")
	}
	return s
}

// fullToolset sets every field a toolset can have.
func fullToolset(name string) *switchboard.Toolset {
	return &switchboard.Toolset{
		Name:        name,
		Description: "the repository tools, \"quoted\" ünï",
		Tools: []switchboard.Selector{
			{Server: "github", Tool: "search_*"},
			{Server: "fs", Tool: "read_file", As: "read", Description: "Read one file.",
				Annotations: &switchboard.ToolAnnotations{Title: "Read", ReadOnlyHint: ptr(true), DestructiveHint: ptr(false)}},
		},
		Prompts:   []switchboard.Selector{{Server: "*", Tool: "review"}},
		Resources: []switchboard.ResourceSelector{{Server: "fs", URI: "file:///repo/*"}},
	}
}

func testToolsets(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := toolsets(t, open)
	before := time.Now()
	created, err := s.CreateToolset(ctx, fullToolset("coder"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Version != 1 || !reflect.DeepEqual(created.Toolset, *fullToolset("coder")) {
		t.Errorf("created %+v", created)
	}
	checkTime(t, "created_at", created.CreatedAt, before, time.Now())
	got, err := s.GetToolset(ctx, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, created) {
		t.Errorf("get\n got %+v\nwant %+v", got, created)
	}
	_, err = s.CreateToolset(ctx, fullToolset("coder"))
	checkErr(t, "create again", err, switchboard.ErrToolsetExists)
	_, err = s.GetToolset(ctx, "nope")
	checkErr(t, "get missing", err, switchboard.ErrToolsetNotFound)

	smaller := &switchboard.Toolset{Name: "coder", Tools: []switchboard.Selector{{Server: "fs", Tool: "*"}}}
	updated, err := s.UpdateToolset(ctx, smaller, 1)
	if err != nil {
		t.Fatal(err)
	}
	if updated.Version != 2 || !reflect.DeepEqual(updated.Toolset, *smaller) || !updated.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("updated %+v", updated)
	}
	_, err = s.UpdateToolset(ctx, smaller, 1)
	checkErr(t, "update at an old version", err, switchboard.ErrToolsetConflict)
	_, err = s.UpdateToolset(ctx, &switchboard.Toolset{Name: "nope"}, 0)
	checkErr(t, "update missing", err, switchboard.ErrToolsetNotFound)

	if _, err := s.CreateToolset(ctx, &switchboard.Toolset{Name: "a-support"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListToolsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Toolset.Name != "a-support" || !reflect.DeepEqual(list[1], updated) {
		t.Errorf("list %+v", list)
	}

	checkErr(t, "delete at an old version", s.DeleteToolset(ctx, "coder", 1), switchboard.ErrToolsetConflict)
	if err := s.DeleteToolset(ctx, "coder", 2); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "delete again", s.DeleteToolset(ctx, "coder", 0), switchboard.ErrToolsetNotFound)
}

func testTokens(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := tokens(t, open)
	if list, err := s.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new store lists %v, %v", list, err)
	}
	before := time.Now()
	ci := &switchboard.StoredToken{Token: switchboard.Token{Name: "ci", Scopes: []switchboard.Scope{"mcp", "toolset:coder"}},
		Hash: sha256.Sum256([]byte("secret one"))}
	if err := s.CreateToken(ctx, ci); err != nil {
		t.Fatal(err)
	}
	checkTime(t, "created_at", ci.CreatedAt, before, time.Now())
	dup := &switchboard.StoredToken{Token: switchboard.Token{Name: "ci", Scopes: []switchboard.Scope{"admin"}},
		Hash: sha256.Sum256([]byte("secret two"))}
	checkErr(t, "create again", s.CreateToken(ctx, dup), switchboard.ErrTokenExists)
	bot := &switchboard.StoredToken{Token: switchboard.Token{Name: "bot", Scopes: []switchboard.Scope{"admin"}},
		Hash: sha256.Sum256([]byte("secret three"))}
	if err := s.CreateToken(ctx, bot); err != nil {
		t.Fatal(err)
	}

	used := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.TouchToken(ctx, "ci", used); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "bot" || list[1].Name != "ci" {
		t.Fatalf("list %+v", list)
	}
	if list[0].LastUsedAt != nil || list[0].Hash != bot.Hash {
		t.Errorf("bot listed as %+v", list[0])
	}
	got := list[1]
	if got.Hash != ci.Hash || !reflect.DeepEqual(got.Scopes, ci.Scopes) || !got.CreatedAt.Equal(ci.CreatedAt) ||
		got.LastUsedAt == nil || !got.LastUsedAt.Equal(used) {
		t.Errorf("ci listed as %+v (last used %v), want %+v used at %v", got, got.LastUsedAt, ci, used)
	}

	if err := s.DeleteToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "revoke again", s.DeleteToken(ctx, "ci"), switchboard.ErrTokenNotFound)
	if err := s.TouchToken(ctx, "ci", used); err != nil {
		t.Errorf("touching a revoked token: %v", err)
	}
	if list, _ := s.ListTokens(ctx); len(list) != 1 {
		t.Errorf("after revoking: %+v", list)
	}
}

// testToolsetTokenFeed: toolset writes and token creations and revocations
// reach the change feed, as kinds of their own; a token's use does not.
func testToolsetTokenFeed(t *testing.T, open OpenFunc) {
	w := mustOpen(t, open)
	feed, ok := mustOpen(t, open).(switchboard.ChangeFeed)
	if !ok {
		t.Skip("the store has no change feed (optional)")
	}
	ctx := context.Background()
	next := watchFeed(t, feed)
	ts, tk := w.(switchboard.ToolsetStore), w.(switchboard.TokenStore)
	if _, err := ts.CreateToolset(ctx, fullToolset("coder")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.UpdateToolset(ctx, fullToolset("coder"), 1); err != nil {
		t.Fatal(err)
	}
	if err := ts.DeleteToolset(ctx, "coder", 0); err != nil {
		t.Fatal(err)
	}
	if err := tk.CreateToken(ctx, &switchboard.StoredToken{Token: switchboard.Token{Name: "ci", Scopes: []switchboard.Scope{"mcp"}}}); err != nil {
		t.Fatal(err)
	}
	if err := tk.TouchToken(ctx, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tk.DeleteToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, next,
		switchboard.Change{Kind: switchboard.ChangeToolset, Name: "coder", Version: 1},
		switchboard.Change{Kind: switchboard.ChangeToolset, Name: "coder", Version: 2},
		switchboard.Change{Kind: switchboard.ChangeToolset, Name: "coder", Version: 0},
		switchboard.Change{Kind: switchboard.ChangeToken, Name: "ci", Version: 1},
		switchboard.Change{Kind: switchboard.ChangeToken, Name: "ci", Version: 0},
	)
}
