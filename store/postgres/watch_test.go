package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
)

// watchFor returns the changes Watch reports, and a stop that ends it and
// waits for it to return.
func watchFor(t *testing.T, s *Store) (<-chan switchboard.Change, func()) {
	t.Helper()
	ch := make(chan switchboard.Change, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func(c switchboard.Change) { ch <- c }) }()
	return ch, func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
	}
}

func next(t *testing.T, ch <-chan switchboard.Change) switchboard.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported within 10s")
		return switchboard.Change{}
	}
}

// Every write reported in order: storetest's ChangeFeedReportsEveryWrite.

// A watcher whose connection is terminated reconnects and reports a
// resync, then the writes made after it.
func TestWatchReconnectsAfterTerminatedBackend(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch, stop := watchFor(t, s)
	defer stop()
	if c := next(t, ch); c.Kind != switchboard.ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.Kind != switchboard.ChangeResync {
		t.Fatalf("after the termination: %+v, want a resync", c)
	}
	// The pool's connections were terminated too; it replaces them.
	if _, err := s.Create(ctx, &switchboard.ServerConfig{Name: "b", Transport: switchboard.TransportStdio, Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c != (switchboard.Change{Kind: switchboard.ChangeServer, Name: "b", Version: 1}) {
		t.Fatalf("after the reconnection: %+v, want b's creation", c)
	}
}

func TestWatchBackoff(t *testing.T) {
	for n, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second} {
		if got := watchBackoff(n); got != want {
			t.Errorf("watchBackoff(%d) = %v, want %v", n, got, want)
		}
	}
	if got := watchBackoff(1000); got != watchRetryMax {
		t.Errorf("watchBackoff(1000) = %v", got)
	}
}

// Writes right after every connection was terminated succeed: the pool's
// dead connections are found out and replaced within the write's retries.
func TestWritesSurviveTerminatedConnections(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 4
	for i := range n {
		if _, err := s.Create(ctx, &switchboard.ServerConfig{Name: fmt.Sprint("s", i), Transport: switchboard.TransportStdio, Command: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// Fill the pool with busy, then idle, connections.
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _, _ = s.pool.Exec(ctx, "SELECT pg_sleep(0.05)") })
	}
	wg.Wait()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.Update(ctx, &switchboard.ServerConfig{Name: fmt.Sprint("s", i), Transport: switchboard.TransportStdio, Command: "y"}, 1)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d after the termination: %v", i, err)
		}
	}
}
