package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openStore opens a fresh SQLite store, closed when the test ends.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func list(t *testing.T, st sb.AuditStore) []sb.AuditEntry {
	t.Helper()
	es, err := st.ListAudit(context.Background(), sb.AuditQuery{Limit: sb.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func call(server, tool string) sb.AuditEntry {
	return sb.AuditEntry{Time: time.Now(), Kind: sb.AuditTool, Server: server, Name: tool, Outcome: "ok"}
}

// Record never waits: with nobody writing, a full queue drops the
// entries beyond it and counts them.
func TestRecordDropsWhenTheQueueIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged strings.Builder
		l := audit.New(audit.Options{Store: openStore(t), QueueSize: 4, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		for range 10 {
			l.Record(context.Background(), call("a", "echo"), nil)
		}
		if s := l.Stats(); s.Dropped != 6 || s.Queued != 4 {
			t.Errorf("stats %+v, want 6 dropped and 4 queued", s)
		}
		// The writer says so at its next flush, once.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		time.Sleep(2 * audit.DefaultFlushInterval)
		synctest.Wait()
		cancel()
		<-done
		if n := strings.Count(logged.String(), "audit entries were dropped"); n != 1 || !strings.Contains(logged.String(), "dropped=6") {
			t.Errorf("logged %d warnings of drops, want one of 6:\n%s", n, logged.String())
		}
	})
}

// Run writes a full batch at once, a partial one after FlushInterval, and
// what is queued when it ends.
func TestRunWritesBySizeIntervalAndAtTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		l := audit.New(audit.Options{Store: st, BatchSize: 3, FlushInterval: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		for range 4 {
			l.Record(ctx, call("a", "echo"), nil)
		}
		synctest.Wait()
		if n := len(list(t, st)); n != 3 {
			t.Fatalf("%d entries written before the interval, want the full batch of 3", n)
		}
		time.Sleep(time.Minute) // the bubble's clock: the interval passes at once
		synctest.Wait()
		if n := len(list(t, st)); n != 4 {
			t.Fatalf("%d entries written after the interval, want 4", n)
		}
		l.Record(ctx, call("a", "last"), nil)
		cancel()
		<-done
		es := list(t, st)
		if len(es) != 5 || es[4].Name != "last" {
			t.Fatalf("after Run ended: %d entries, want 5 ending with the last", len(es))
		}
		if s := l.Stats(); s.Written != 5 || s.Dropped != 0 || s.Failed != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}

// Queued counts an entry until it is written: while it waits in the batch
// for the interval as much as on the queue (the gauge said 0 there, and a
// caller waiting for the log to be empty went on with the batch unwritten).
func TestQueuedCountsTheBatchUntilItIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		l := audit.New(audit.Options{Store: st, FlushInterval: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		for range 2 {
			l.Record(ctx, call("a", "echo"), nil)
		}
		synctest.Wait() // Run has taken both off the queue into its batch
		if s := l.Stats(); s.Queued != 2 || s.Written != 0 {
			t.Errorf("before the interval: stats %+v, want 2 queued, none written", s)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if s := l.Stats(); s.Queued != 0 || s.Written != 2 || len(list(t, st)) != 2 {
			t.Errorf("after the interval: stats %+v, want none queued, 2 written", s)
		}
		cancel()
		<-done
	})
}

// Arguments are hashed always, kept only for a server that opts in, and
// kept masked: credential-like members, credential-like values, and the
// server's own secrets.
func TestArgumentsKeptOnlyWhenOptedInAndMasked(t *testing.T) {
	st := openStore(t)
	kept := &sb.ServerConfig{Name: "kept", Env: map[string]string{"API_KEY": "hunter2-long-secret"},
		Audit: &sb.AuditConfig{Arguments: true}}
	l := audit.New(audit.Options{Store: st, KeepsArguments: func(server string) *sb.ServerConfig {
		if server == "kept" {
			return kept
		}
		return nil
	}})
	args := []byte(`{"query":"find hunter2-long-secret","api_key":"abc","nested":{"password":7},"n":12345678901234567890,"url":"https://u:pw@example.com/x"}`)
	l.Record(context.Background(), call("plain", "search"), args)
	l.Record(context.Background(), call("kept", "search"), args)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Run(ctx) // writes the queue and returns

	es := list(t, st)
	if len(es) != 2 {
		t.Fatalf("%d entries, want 2", len(es))
	}
	sum := sha256.Sum256(args)
	for _, e := range es {
		if e.ArgsSHA256 != hex.EncodeToString(sum[:]) || e.RequestBytes != int64(len(args)) {
			t.Errorf("%s: sha256 %s, %d bytes; want the arguments' (%d bytes)", e.Server, e.ArgsSHA256, e.RequestBytes, len(args))
		}
		if e.Principal != sb.PrincipalLocal {
			t.Errorf("%s: principal %q, want local (no principal in the context)", e.Server, e.Principal)
		}
	}
	if es[0].Arguments != nil {
		t.Errorf("plain: arguments %s stored; the server did not opt in", es[0].Arguments)
	}
	var got map[string]any
	if err := json.Unmarshal(es[1].Arguments, &got); err != nil {
		t.Fatalf("kept: arguments %q: %v", es[1].Arguments, err)
	}
	for _, secret := range []string{"hunter2", `"abc"`, "pw@", ":7"} {
		if strings.Contains(string(es[1].Arguments), secret) {
			t.Errorf("kept: arguments %s show %s", es[1].Arguments, secret)
		}
	}
	if got["query"] != "find ***" || got["api_key"] != "***" || !strings.Contains(string(es[1].Arguments), "12345678901234567890") {
		t.Errorf("kept: arguments %s; want the query with the env secret masked, api_key masked, the number as sent", es[1].Arguments)
	}
}

// The principal and the surface come from the context.
func TestRecordTakesPrincipalAndSurfaceFromTheContext(t *testing.T) {
	st := openStore(t)
	l := audit.New(audit.Options{Store: st})
	ctx := sb.WithPrincipal(context.Background(), sb.Principal{Name: "ci"})
	ctx = audit.WithSurface(ctx, sb.SurfaceToolset, "coder")
	ctx = audit.WithSurface(ctx, sb.SurfaceMCP, "") // the outer surface stays
	l.Record(ctx, call("a", "echo"), nil)
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Run(cctx)
	es := list(t, st)
	if len(es) != 1 || es[0].Principal != "ci" || es[0].Surface != sb.SurfaceToolset || es[0].Toolset != "coder" {
		t.Errorf("entries %+v, want one of ci on toolset coder", es)
	}
}

// Retention deletes by age and by rows, by the log's clock.
func TestTrimByAgeAndRows(t *testing.T) {
	st := openStore(t)
	now := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	var es []sb.AuditEntry
	for day := range 10 { // one entry a day, March 1 to 10
		e := call("a", "echo")
		e.Time = now.Add(-time.Duration(9-day) * 24 * time.Hour)
		es = append(es, e)
	}
	if err := st.AppendAudit(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	l := audit.New(audit.Options{Store: st, Now: func() time.Time { return now }, Retention: audit.Retention{MaxAge: audit.Days(5), PerPass: 2}})
	if n := l.Trim(context.Background()); n != 4 {
		t.Errorf("trimmed %d by age, want 4 (March 1-4; passes of 2)", n)
	}
	l = audit.New(audit.Options{Store: st, Now: func() time.Time { return now }, Retention: audit.Retention{MaxAge: audit.Days(5), MaxRows: 3}})
	if n := l.Trim(context.Background()); n != 3 {
		t.Errorf("trimmed %d by rows, want 3", n)
	}
	left := list(t, st)
	if len(left) != 3 || !left[0].Time.Equal(now.Add(-2*24*time.Hour)) {
		t.Errorf("left %d entries from %v, want 3 from March 8", len(left), left[0].Time)
	}
}

// Run trims in the background, every Interval, from its start.
func TestRunTrimsEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		old := func() {
			e := call("a", "echo")
			e.Time = time.Now().Add(-2 * time.Hour)
			if err := st.AppendAudit(context.Background(), []sb.AuditEntry{e}); err != nil {
				t.Fatal(err)
			}
		}
		old()
		l := audit.New(audit.Options{Store: st, Retention: audit.Retention{MaxAge: time.Hour, Interval: 10 * time.Minute}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		synctest.Wait()
		if n := len(list(t, st)); n != 0 {
			t.Fatalf("%d entries left after the first pass, want 0", n)
		}
		old()
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if n := len(list(t, st)); n != 1 {
			t.Fatalf("%d entries before the interval, want 1", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(list(t, st)); n != 0 {
			t.Fatalf("%d entries after the interval, want 0", n)
		}
		if s := l.Stats(); s.Trimmed != 2 {
			t.Errorf("trimmed %d, want 2", s.Trimmed)
		}
		cancel()
		<-done
	})
}

// Entries queued when Run is told to end are written, also those of a
// batch it was writing: a write does not take Run's cancellation.
func TestRunEndingLosesNoEntry(t *testing.T) {
	st := openStore(t)
	// Run's select sees both the queue and its end: each round, one in
	// two picks the queue first, which wrote a batch with the cancelled
	// context.
	for round := range 20 {
		l := audit.New(audit.Options{Store: st, BatchSize: 1})
		for range 5 {
			l.Record(context.Background(), call("a", "echo"), nil)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l.Run(ctx)
		if s := l.Stats(); s.Written != 5 || s.Failed != 0 {
			t.Fatalf("round %d: stats %+v, want the 5 written", round, s)
		}
	}
}
