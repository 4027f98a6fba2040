package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// feedStore is a store with a change feed that the test drives, and a count
// of its Get calls.
type feedStore struct {
	sb.Store
	changes chan sb.Change
	gets    atomic.Int64
}

func (s *feedStore) Get(ctx context.Context, name string) (sb.StoredServer, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, name)
}

func (s *feedStore) Watch(ctx context.Context, fn func(sb.Change)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c := <-s.changes:
			fn(c)
		}
	}
}

// replicas opens n stores on one SQLite file, as n serve processes would,
// and a loaded registry on each.
func replicas(t *testing.T, n int) ([]*registry.Registry, []sb.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	var regs []*registry.Registry
	var stores []sb.Store
	for i := range n {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler), ReplicaID: string(rune('a' + i))})
		t.Cleanup(func() { reg.Shutdown(context.Background()) })
		if err := reg.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		regs, stores = append(regs, reg), append(stores, st)
	}
	return regs, stores
}

func stdioServer(t *testing.T, name string, enabled bool) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t),
		ProtocolVersion: "2025-11-25", Enabled: &enabled}
}

// versions is every server's name and version as reg runs it.
func versions(reg *registry.Registry) map[string]int64 {
	out := map[string]int64{}
	for _, v := range reg.List() {
		out[v.Name] = v.Version
	}
	return out
}

func sameVersions(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A resync applies what another replica created, changed and deleted, and
// leaves alone the sessions of servers that did not change.
func TestResyncAppliesAnotherReplicasWrites(t *testing.T) {
	regs, _ := replicas(t, 2)
	a, b := regs[0], regs[1]
	ctx := context.Background()
	for _, cfg := range []*sb.ServerConfig{stdioServer(t, "kept", true), stdioServer(t, "changed", true), stdioServer(t, "dropped", false)} {
		if _, err := a.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := versions(b), versions(a); !sameVersions(got, want) {
		t.Fatalf("after creates: b runs %v, a %v", got, want)
	}
	kept, _ := b.Session("kept")
	changed, _ := b.Session("changed")
	if kept == nil || changed == nil {
		t.Fatal("b did not start the enabled servers it learned of")
	}

	cfg := stdioServer(t, "changed", true)
	cfg.Env = map[string]string{"VARIANT": "2"} // a connection change: a new session
	if _, err := a.Update(ctx, "changed", cfg, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "dropped", 0); err != nil {
		t.Fatal(err)
	}
	before := b.ReplicaInfo().LastSync
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := versions(b), versions(a); !sameVersions(got, want) {
		t.Fatalf("after update and delete: b runs %v, a %v", got, want)
	}
	if s, _ := b.Session("kept"); s != kept {
		t.Error("the unchanged server's session was replaced")
	}
	if s, _ := b.Session("changed"); s == changed || s == nil {
		t.Error("the changed server's session was not replaced")
	}
	if info := b.ReplicaInfo(); info.ID != "b" || !info.LastSync.After(before) || info.ChangeFeed {
		t.Errorf("ReplicaInfo %+v: want id b, a later LastSync than %v, no change feed", info, before)
	}
}

// A replica's own writes come back through the feed; they find their
// version running and are neither read again nor applied again, while a
// change made elsewhere is applied, in order.
func TestOwnChangesAreNotAppliedTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	base, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st := &feedStore{Store: base, changes: make(chan sb.Change)}
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
	defer reg.Shutdown(context.Background())
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.RunSync(ctx, 0) }()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("RunSync returned %v", err)
		}
	}()
	events, unsubscribe := reg.Subscribe()
	defer unsubscribe()

	own, err := reg.Create(context.Background(), stdioServer(t, "own", true))
	if err != nil {
		t.Fatal(err)
	}
	session, _ := reg.Session("own")
	gets := st.gets.Load()
	st.changes <- sb.Change{Kind: sb.ChangeServer, Name: "own", Version: own.Version}

	// Another replica's write, straight to the store, then its notice.
	if _, err := base.Create(context.Background(), stdioServer(t, "theirs", false)); err != nil {
		t.Fatal(err)
	}
	st.changes <- sb.Change{Kind: sb.ChangeServer, Name: "theirs", Version: 1}
	ownChanges := 0 // created, updated, deleted: not the session's own events
	timeout := time.After(10 * time.Second)
wait:
	for {
		select {
		case ev := <-events:
			switch {
			case ev.Server == "theirs" && ev.Reason == sb.ReasonCreated:
				break wait
			case ev.Server == "own" && (ev.Reason == sb.ReasonCreated || ev.Reason == sb.ReasonUpdated || ev.Reason == sb.ReasonDeleted):
				ownChanges++
			}
		case <-timeout:
			t.Fatal("the other replica's server was not applied within 10s")
		}
	}
	if ownChanges != 1 {
		t.Errorf("%d config events for own, want 1 (its creation; its notice must publish nothing)", ownChanges)
	}
	if s, _ := reg.Session("own"); s != session {
		t.Error("the own server's session was replaced by its own notification")
	}
	if n := st.gets.Load() - gets; n != 1 {
		t.Errorf("%d store reads for the two notices, want 1 (theirs only)", n)
	}
	if v := versions(reg); v["own"] != 1 || v["theirs"] != 1 {
		t.Errorf("versions %v", v)
	}
}

// A server created through one replica can be changed and deleted through
// another at once, before any notice or resync reached it.
func TestWriteThroughAnotherReplicaReadsTheStore(t *testing.T) {
	regs, _ := replicas(t, 2)
	a, b := regs[0], regs[1]
	ctx := context.Background()
	if _, err := a.Create(ctx, stdioServer(t, "x", false)); err != nil {
		t.Fatal(err)
	}
	cfg := stdioServer(t, "x", false)
	cfg.CallTimeoutMS = 1234
	v, err := b.Update(ctx, "x", cfg, 1)
	if err != nil {
		t.Fatalf("update through the other replica: %v", err)
	}
	if v.Version != 2 || v.CallTimeoutMS != 1234 {
		t.Fatalf("updated view %+v", v)
	}
	if _, err := a.Create(ctx, stdioServer(t, "y", false)); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "y", 1); err != nil {
		t.Fatalf("delete through the other replica: %v", err)
	}
	if _, err := b.Update(ctx, "nowhere", stdioServer(t, "nowhere", false), 0); !errors.Is(err, sb.ErrNotFound) {
		t.Fatalf("update of a server nobody has: %v, want ErrNotFound", err)
	}
}

// flakyStore is an empty store whose List fails while failures lasts, and
// which records when List was called.
type flakyStore struct {
	sb.Store // nil: only List is used
	failures int
	calls    []time.Time
}

func (s *flakyStore) List(context.Context) ([]sb.StoredServer, error) {
	s.calls = append(s.calls, time.Now())
	if s.failures > 0 {
		s.failures--
		return nil, errors.New("connection refused")
	}
	return nil, nil
}

// A resync that fails is retried after 1, 2, 4 s, not at the next
// interval; once one succeeds, the next is one interval later.
func TestFailedResyncIsRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &flakyStore{}
		reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
		if err := reg.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		st.failures = 3 // from the first resync on
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- reg.RunSync(ctx, 30*time.Second) }()
		start := time.Now()
		time.Sleep(70 * time.Second)
		cancel()
		<-done
		reg.Shutdown(context.Background())
		var got []time.Duration
		for _, c := range st.calls {
			got = append(got, c.Sub(start))
		}
		// Load's List, the resync at 30 s (fails), retries 1, 2 and 4 s
		// after each failure, the last succeeding, and 30 s after that.
		want := []time.Duration{0, 30 * time.Second, 31 * time.Second, 33 * time.Second, 37 * time.Second, 67 * time.Second}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("List called at %v, want %v", got, want)
		}
		if ls := reg.ReplicaInfo().LastSync; !ls.Equal(start.Add(67 * time.Second)) {
			t.Errorf("LastSync %v, want the 67 s resync", ls.Sub(start))
		}
	})
}
