// Package storetest is a conformance suite for implementations of
// [switchboard.Store] (and of [switchboard.ToolsetStore],
// [switchboard.TokenStore] and [switchboard.AuditStore], which every store
// of ours implements too).
// Each implementation's tests call [Run].
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// OpenFunc opens a new Store on one test database. Each call returns an
// independent Store, as a restarted or second process would have.
type OpenFunc func() (switchboard.Store, error)

// Run runs the suite. newDB is called once per subtest, with that subtest's
// t: it prepares a fresh, empty database (and removes it in t.Cleanup) and
// returns an OpenFunc for it. The suite closes every Store it opens.
func Run(t *testing.T, newDB func(t *testing.T) OpenFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open OpenFunc)
	}{
		{"CreateGetRoundTrip", testRoundTrip},
		{"CreateExisting", testCreateExisting},
		{"NotFound", testNotFound},
		{"RejectsNilConfigAndEmptyName", testRejectsBadArgs},
		{"ListOrderedByName", testList},
		{"UpdateVersions", testUpdate},
		{"Delete", testDelete},
		{"ConcurrentUpdatesOneWins", testConcurrentUpdates},
		{"ConcurrentDeletesOneWins", testConcurrentDeletes},
		{"ConcurrentCreatesSameName", testConcurrentCreatesSameName},
		{"ConcurrentCreatesDistinct", testConcurrentCreatesDistinct},
		{"SurvivesReopen", testReopen},
		{"ChangeFeedReportsEveryWrite", testChangeFeed},
		{"Toolsets", testToolsets},
		{"Tokens", testTokens},
		{"ChangeFeedReportsToolsetsAndTokens", testToolsetTokenFeed},
		{"OAuthGrants", testOAuthGrants},
		{"OAuthGrantVersions", testOAuthGrantVersions},
		{"OAuthRefreshClaims", testOAuthRefreshClaims},
		{"OAuthPending", testOAuthPending},
		{"ChangeFeedReportsOAuthGrants", testOAuthFeed},
		{"AuditRoundTrip", testAuditRoundTrip},
		{"AuditQuery", testAuditQuery},
		{"AuditBatchesOfEverySize", testAuditBatchSizes},
		{"AuditSharedAndReopened", testAuditShared},
		{"AuditFollowedWhileWritten", testAuditFollowedWhileWritten},
		{"AuditTrim", testAuditTrim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newDB(t)) })
	}
}

// mustOpen opens a Store that is closed when the test ends.
func mustOpen(t *testing.T, open OpenFunc) switchboard.Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func ptr[T any](v T) *T { return &v }

// stdioConfig sets every field a stdio server can have, with an explicit
// enabled=false so a dropped pointer shows.
func stdioConfig(name string) *switchboard.ServerConfig {
	return &switchboard.ServerConfig{
		Name:              name,
		Enabled:           ptr(false),
		Transport:         switchboard.TransportStdio,
		Command:           "npx",
		Args:              []string{"-y", "@modelcontextprotocol/server-everything", "--flag=a b"},
		Env:               map[string]string{"API_KEY": "s3cr3t \"quoted\" ünï", "EMPTY": "", "PATH": "/usr/bin"},
		Cwd:               "/srv/mcp",
		StartupTimeoutMS:  90_000,
		CallTimeoutMS:     15_000,
		MaxTotalTimeoutMS: 600_000,
		ProtocolVersion:   "2025-06-18",
		SessionScope:      switchboard.SessionPerClient,
		Retry:             &switchboard.RetryConfig{MaxAttempts: 7, DelaysMS: []int64{100, 0, 3000}, SlowRetryMS: 45_000},
	}
}

// remoteConfig sets every field a remote server can have.
func remoteConfig(name string) *switchboard.ServerConfig {
	return &switchboard.ServerConfig{
		Name:      name,
		Enabled:   ptr(true),
		Transport: switchboard.TransportStreamableHTTP,
		URL:       "https://mcp.example.com/v1/mcp?tenant=a&x=%20",
		Headers:   map[string]string{"Authorization": "Bearer abc.def", "X-Trace": "1"},
		Retry:     &switchboard.RetryConfig{DelaysMS: []int64{5}},
	}
}

// minimalConfig leaves every optional field unset.
func minimalConfig(name string) *switchboard.ServerConfig {
	return &switchboard.ServerConfig{Name: name, Transport: switchboard.TransportStdio, Command: "true"}
}

func checkConfig(t *testing.T, what string, got, want *switchboard.ServerConfig) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: config\n got %#v\nwant %#v", what, got, want)
	}
}

// checkSame reports whether two reads of a server agree, including the
// timestamps (compared as instants).
func checkSame(t *testing.T, what string, got, want switchboard.StoredServer) {
	t.Helper()
	checkConfig(t, what, &got.Config, &want.Config)
	if got.Version != want.Version {
		t.Errorf("%s: version %d, want %d", what, got.Version, want.Version)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: times created %v updated %v, want %v, %v",
			what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
}

func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want one matching %q", what, err, want)
	}
}

func checkTime(t *testing.T, what string, got, notBefore, notAfter time.Time) {
	t.Helper()
	// The database's clock may be another machine's; allow some skew.
	const slack = 5 * time.Second
	if got.IsZero() || got.Before(notBefore.Add(-slack)) || got.After(notAfter.Add(slack)) {
		t.Errorf("%s: %v, want between %v and %v", what, got, notBefore, notAfter)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s: %v is not in UTC", what, got)
	}
}

func testRoundTrip(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	for _, cfg := range []*switchboard.ServerConfig{stdioConfig("full-stdio"), remoteConfig("full-remote"), minimalConfig("minimal")} {
		want := cfg.Clone()
		before := time.Now()
		created, err := s.Create(ctx, cfg)
		if err != nil {
			t.Fatalf("create %s: %v", cfg.Name, err)
		}
		after := time.Now()
		checkConfig(t, "create "+cfg.Name, &created.Config, want)
		if created.Version != 1 {
			t.Errorf("create %s: version %d, want 1", cfg.Name, created.Version)
		}
		checkTime(t, "create "+cfg.Name+": created_at", created.CreatedAt, before, after)
		if !created.UpdatedAt.Equal(created.CreatedAt) {
			t.Errorf("create %s: updated_at %v differs from created_at %v", cfg.Name, created.UpdatedAt, created.CreatedAt)
		}
		// The store must not keep or return the caller's maps and slices.
		cfg.Args = append(cfg.Args, "late")
		if cfg.Env != nil {
			cfg.Env["LATE"] = "x"
		}
		if cfg.Retry != nil {
			cfg.Retry.DelaysMS[0] = 999
		}
		got, err := s.Get(ctx, cfg.Name)
		if err != nil {
			t.Fatalf("get %s: %v", cfg.Name, err)
		}
		checkSame(t, "get "+cfg.Name, got, created)
		checkConfig(t, "get "+cfg.Name, &got.Config, want)
	}
	if enabled := func() *bool {
		got, _ := s.Get(ctx, "full-stdio")
		return got.Config.Enabled
	}(); enabled == nil || *enabled {
		t.Errorf("enabled=false came back as %v", enabled)
	}
}

func testCreateExisting(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	first, err := s.Create(ctx, stdioConfig("dup"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, remoteConfig("dup"))
	checkErr(t, "second create", err, switchboard.ErrExists)
	got, err := s.Get(ctx, "dup")
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "after failed create", got, first)
}

func testNotFound(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	if _, err := s.Create(ctx, minimalConfig("other")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, "missing")
	checkErr(t, "get", err, switchboard.ErrNotFound)
	for _, v := range []int64{0, 1, 7} {
		_, err = s.Update(ctx, minimalConfig("missing"), v)
		checkErr(t, fmt.Sprintf("update version %d", v), err, switchboard.ErrNotFound)
		err = s.Delete(ctx, "missing", v)
		checkErr(t, fmt.Sprintf("delete version %d", v), err, switchboard.ErrNotFound)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, switchboard.ErrNotFound) {
		t.Errorf("update of a missing server created it: get: %v", err)
	}
}

func testRejectsBadArgs(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	if _, err := s.Create(ctx, nil); err == nil {
		t.Error("create nil: no error")
	}
	if _, err := s.Create(ctx, minimalConfig("")); err == nil {
		t.Error("create with empty name: no error")
	}
	if _, err := s.Update(ctx, nil, 0); err == nil {
		t.Error("update nil: no error")
	}
	if _, err := s.Update(ctx, minimalConfig(""), 0); err == nil {
		t.Error("update with empty name: no error")
	}
	if _, err := s.Get(ctx, ""); err == nil {
		t.Error("get empty name: no error")
	}
	if err := s.Delete(ctx, "", 0); err == nil {
		t.Error("delete empty name: no error")
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("list after rejected writes: %v, %v; want nothing stored", list, err)
	}
}

func testList(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	list, err := s.List(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("list of empty store: %v, %v", list, err)
	}
	// Byte order, which a locale-aware collation (ignoring '-') would break.
	want := []string{"a", "a-c", "ab", "b", "b9", "ba"}
	for _, name := range []string{"ba", "ab", "b", "a-c", "b9", "a"} {
		if _, err := s.Create(ctx, stdioConfig(name)); err != nil {
			t.Fatal(err)
		}
	}
	list, err = s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, srv := range list {
		got = append(got, srv.Config.Name)
		checkConfig(t, "list "+srv.Config.Name, &srv.Config, stdioConfig(srv.Config.Name))
		if srv.Version != 1 {
			t.Errorf("list %s: version %d", srv.Config.Name, srv.Version)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list order %q, want %q", got, want)
	}
}

func testUpdate(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	created, err := s.Create(ctx, stdioConfig("srv"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // so updated_at can move

	// Update with the read version; the new config replaces the old one
	// whole: fields it leaves out are gone, not merged.
	next := minimalConfig("srv")
	next.Args = []string{"--v2"}
	before := time.Now()
	v2, err := s.Update(ctx, next, 1)
	if err != nil {
		t.Fatalf("update at version 1: %v", err)
	}
	after := time.Now()
	if v2.Version != 2 {
		t.Errorf("version after update %d, want 2", v2.Version)
	}
	checkConfig(t, "update result", &v2.Config, next)
	if !v2.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("update changed created_at from %v to %v", created.CreatedAt, v2.CreatedAt)
	}
	checkTime(t, "updated_at", v2.UpdatedAt, before, after)
	if v2.UpdatedAt.Before(created.UpdatedAt) {
		t.Errorf("updated_at went back from %v to %v", created.UpdatedAt, v2.UpdatedAt)
	}
	got, err := s.Get(ctx, "srv")
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "get after update", got, v2)

	// Version 0 means "whatever is stored".
	v3, err := s.Update(ctx, remoteConfig("srv"), 0)
	if err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
	if v3.Version != 3 {
		t.Errorf("version after unconditional update %d, want 3", v3.Version)
	}

	// A stale or future version conflicts and changes nothing.
	for _, stale := range []int64{1, 2, 4} {
		_, err = s.Update(ctx, stdioConfig("srv"), stale)
		checkErr(t, fmt.Sprintf("update at version %d of 3", stale), err, switchboard.ErrConflict)
	}
	got, err = s.Get(ctx, "srv")
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "get after conflicts", got, v3)
	checkConfig(t, "get after conflicts", &got.Config, remoteConfig("srv"))
}

func testDelete(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s := mustOpen(t, open)
	if _, err := s.Create(ctx, stdioConfig("gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, stdioConfig("gone"), 1); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "delete at stale version", s.Delete(ctx, "gone", 1), switchboard.ErrConflict)
	if _, err := s.Get(ctx, "gone"); err != nil {
		t.Fatalf("server gone after conflicting delete: %v", err)
	}
	if err := s.Delete(ctx, "gone", 2); err != nil {
		t.Fatalf("delete at current version: %v", err)
	}
	_, err := s.Get(ctx, "gone")
	checkErr(t, "get after delete", err, switchboard.ErrNotFound)
	checkErr(t, "delete again", s.Delete(ctx, "gone", 0), switchboard.ErrNotFound)

	// Version 0 deletes whatever is stored; a re-created server starts over.
	if _, err := s.Create(ctx, minimalConfig("gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, minimalConfig("gone"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gone", 0); err != nil {
		t.Fatalf("unconditional delete: %v", err)
	}
	again, err := s.Create(ctx, minimalConfig("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != 1 {
		t.Errorf("re-created server at version %d, want 1", again.Version)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 1 {
		t.Errorf("list: %d servers, %v; want 1", len(list), err)
	}
}

// race runs fn(i) for i in [0, n) on n goroutines released at once, and
// returns their errors by i.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// count returns how many errors are nil and how many match want; it reports
// any other error.
func count(t *testing.T, errs []error, want error) (ok, matched int) {
	t.Helper()
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, want):
			matched++
		default:
			t.Errorf("writer %d: unexpected error: %v", i, err)
		}
	}
	return ok, matched
}

// twoStores opens two Stores on one database, as two replicas would; the
// concurrency tests spread their writers over both.
func twoStores(t *testing.T, open OpenFunc) [2]switchboard.Store {
	return [2]switchboard.Store{mustOpen(t, open), mustOpen(t, open)}
}

func testConcurrentUpdates(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	stores := twoStores(t, open)
	if _, err := stores[0].Create(ctx, minimalConfig("hot")); err != nil {
		t.Fatal(err)
	}
	const n = 10
	results := make([]switchboard.StoredServer, n)
	errs := race(n, func(i int) error {
		cfg := minimalConfig("hot")
		cfg.Args = []string{fmt.Sprint("writer-", i)}
		var err error
		results[i], err = stores[i%2].Update(ctx, cfg, 1)
		return err
	})
	ok, conflicts := count(t, errs, switchboard.ErrConflict)
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d updates at the same version succeeded and %d conflicted; want 1 and %d", ok, conflicts, n-1)
	}
	winner := -1
	for i, err := range errs {
		if err == nil {
			winner = i
		}
	}
	got, err := stores[1].Get(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 {
		t.Errorf("version %d after one successful update, want 2", got.Version)
	}
	checkSame(t, "stored after race", got, results[winner])
}

func testConcurrentDeletes(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	stores := twoStores(t, open)
	if _, err := stores[0].Create(ctx, minimalConfig("doomed")); err != nil {
		t.Fatal(err)
	}
	const n = 10
	errs := race(n, func(i int) error { return stores[i%2].Delete(ctx, "doomed", 1) })
	ok, lost := count(t, errs, switchboard.ErrNotFound)
	if ok != 1 || lost != n-1 {
		t.Errorf("%d deletes succeeded and %d found nothing; want 1 and %d", ok, lost, n-1)
	}
}

func testConcurrentCreatesSameName(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	stores := twoStores(t, open)
	const n = 10
	errs := race(n, func(i int) error {
		cfg := minimalConfig("contested")
		cfg.Args = []string{fmt.Sprint("creator-", i)}
		_, err := stores[i%2].Create(ctx, cfg)
		return err
	})
	ok, exists := count(t, errs, switchboard.ErrExists)
	if ok != 1 || exists != n-1 {
		t.Errorf("%d creates of one name succeeded and %d got ErrExists; want 1 and %d", ok, exists, n-1)
	}
	got, err := stores[0].Get(ctx, "contested")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 {
		t.Errorf("version %d, want 1", got.Version)
	}
}

func testConcurrentCreatesDistinct(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	stores := twoStores(t, open)
	const n = 100
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	errs := race(n, func(i int) error {
		_, err := stores[i%2].Create(ctx, stdioConfig(fmt.Sprintf("srv-%03d", i)))
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		}
	}
	list, err := stores[0].List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != n {
		t.Fatalf("list has %d servers, want %d", len(list), n)
	}
	for i, srv := range list {
		if name := fmt.Sprintf("srv-%03d", i); srv.Config.Name != name {
			t.Errorf("list[%d] is %s, want %s", i, srv.Config.Name, name)
		}
	}
}

func testReopen(t *testing.T, open OpenFunc) {
	ctx := t.Context()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, stdioConfig("kept")); err != nil {
		t.Fatal(err)
	}
	updated, err := s.Update(ctx, remoteConfig("kept"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, minimalConfig("dropped")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "dropped", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// Opening again also re-runs the migrations, which must be a no-op.
	s = mustOpen(t, open)
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("after reopen: %d servers, want 1", len(list))
	}
	checkSame(t, "after reopen", list[0], updated)
	next, err := s.Update(ctx, stdioConfig("kept"), 2)
	if err != nil {
		t.Fatalf("update after reopen: %v", err)
	}
	if next.Version != 3 {
		t.Errorf("version %d, want 3", next.Version)
	}
}
