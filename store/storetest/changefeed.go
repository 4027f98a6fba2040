package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// testChangeFeed: a store that is a [switchboard.ChangeFeed] reports, to a
// watcher on another Store of the same database, a resync when it starts
// listening, then every committed write in commit order with its version
// (0 for a deletion), and nothing for a write that failed. A store without
// a feed skips it.
func testChangeFeed(t *testing.T, open OpenFunc) {
	stores := twoStores(t, open)
	feed, ok := stores[1].(switchboard.ChangeFeed)
	if !ok {
		t.Skip("the store has no change feed (optional)")
	}
	ctx := context.Background()
	next := watchFeed(t, feed)

	w := stores[0]
	if _, err := w.Create(ctx, minimalConfig("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Update(ctx, minimalConfig("a"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Update(ctx, minimalConfig("a"), 1); err == nil {
		t.Fatal("a conflicting update succeeded")
	}
	if _, err := w.Create(ctx, minimalConfig("a")); err == nil {
		t.Fatal("a duplicate create succeeded")
	}
	if err := w.Delete(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, next,
		switchboard.Change{Kind: switchboard.ChangeServer, Name: "a", Version: 1},
		switchboard.Change{Kind: switchboard.ChangeServer, Name: "a", Version: 2},
		switchboard.Change{Kind: switchboard.ChangeServer, Name: "a", Version: 0})
}

// watchFeed watches feed until the test ends, checks that the first change
// it reports is a resync, and returns a function that gives the next change
// (failing the test if none comes within 10 s). When the test ends the
// watch must return context.Canceled.
func watchFeed(t *testing.T, feed switchboard.ChangeFeed) (next func() switchboard.Change) {
	t.Helper()
	ch := make(chan switchboard.Change, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feed.Watch(ctx, func(c switchboard.Change) { ch <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v after its context ended, want context.Canceled", err)
		}
	})
	next = func() switchboard.Change {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no change reported within 10s")
			return switchboard.Change{}
		}
	}
	if c := next(); c.Kind != switchboard.ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	return next
}

// wantChanges fails the test unless the next changes next gives are want,
// in order.
func wantChanges(t *testing.T, next func() switchboard.Change, want ...switchboard.Change) {
	t.Helper()
	for i, w := range want {
		if c := next(); c != w {
			t.Fatalf("change %d = %+v, want %+v", i, c, w)
		}
	}
}
