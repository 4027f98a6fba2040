package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

// The audit tests run on a store that implements
// [switchboard.AuditStore] (both of ours do); they fail on one that does
// not.

func auditStore(t *testing.T, open OpenFunc) switchboard.AuditStore {
	t.Helper()
	s, ok := mustOpen(t, open).(switchboard.AuditStore)
	if !ok {
		t.Fatal("the store does not implement switchboard.AuditStore")
	}
	return s
}

// auditEpoch is the time of the first test entry; entry i is i minutes
// later.
var auditEpoch = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

// auditEntry is entry i of a test log: servers a and b by turns, every
// third call failed, every field set.
func auditEntry(i int) switchboard.AuditEntry {
	e := switchboard.AuditEntry{
		Time:         auditEpoch.Add(time.Duration(i) * time.Minute),
		Principal:    "ci",
		Surface:      switchboard.SurfaceMCP,
		Kind:         switchboard.AuditTool,
		Server:       []string{"a", "b"}[i%2],
		Name:         fmt.Sprintf("tool%d", i%3),
		Outcome:      "ok",
		Duration:     time.Duration(i+1) * 1500 * time.Microsecond,
		RequestBytes: int64(10 + i),
		ResultBytes:  int64(100 + i),
		ArgsSHA256:   fmt.Sprintf("%064x", i),
	}
	if i%3 == 2 {
		e.Outcome, e.Principal = string(switchboard.CodeTimeout), "admin"
	}
	if i%4 == 3 {
		e.Surface, e.Toolset, e.Arguments = switchboard.SurfaceToolset, "coder", json.RawMessage(`{"n":1}`)
	}
	return e
}

func appendAudit(t *testing.T, s switchboard.AuditStore, from, to int) {
	t.Helper()
	var es []switchboard.AuditEntry
	for i := from; i < to; i++ {
		es = append(es, auditEntry(i))
	}
	if err := s.AppendAudit(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

func listAudit(t *testing.T, s switchboard.AuditStore, q switchboard.AuditQuery) []switchboard.AuditEntry {
	t.Helper()
	es, err := s.ListAudit(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// names are the entries' times, as minutes after auditEpoch: which test
// entries a list holds, in its order.
func minutes(es []switchboard.AuditEntry) []int {
	out := []int{}
	for _, e := range es {
		out = append(out, int(e.Time.Sub(auditEpoch)/time.Minute))
	}
	return out
}

func testAuditRoundTrip(t *testing.T, open OpenFunc) {
	s := auditStore(t, open)
	appendAudit(t, s, 0, 4)
	got := listAudit(t, s, switchboard.AuditQuery{})
	if len(got) != 4 {
		t.Fatalf("listed %d entries, want 4", len(got))
	}
	for i, e := range got {
		if i > 0 && e.ID <= got[i-1].ID {
			t.Errorf("entry %d has ID %d after %d: IDs must rise", i, e.ID, got[i-1].ID)
		}
		want := auditEntry(i)
		want.ID = e.ID
		if !reflect.DeepEqual(e, want) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, e, want)
		}
	}
	if got[0].Arguments != nil {
		t.Errorf("entry 0 has arguments %s; none were stored", got[0].Arguments)
	}
}

func testAuditQuery(t *testing.T, open OpenFunc) {
	s := auditStore(t, open)
	appendAudit(t, s, 0, 12)
	all := listAudit(t, s, switchboard.AuditQuery{})
	for _, tt := range []struct {
		name string
		q    switchboard.AuditQuery
		want []int
	}{
		{"server", switchboard.AuditQuery{Server: "b"}, []int{1, 3, 5, 7, 9, 11}},
		{"name", switchboard.AuditQuery{Name: "tool1"}, []int{1, 4, 7, 10}},
		{"principal", switchboard.AuditQuery{Principal: "admin"}, []int{2, 5, 8, 11}},
		{"outcome", switchboard.AuditQuery{Outcome: "timeout"}, []int{2, 5, 8, 11}},
		{"server and outcome", switchboard.AuditQuery{Server: "a", Outcome: "timeout"}, []int{2, 8}},
		{"since until", switchboard.AuditQuery{Since: auditEpoch.Add(3 * time.Minute), Until: auditEpoch.Add(6 * time.Minute)}, []int{3, 4, 5}},
		{"limit keeps the newest", switchboard.AuditQuery{Limit: 3}, []int{9, 10, 11}},
		{"after keeps the oldest after", switchboard.AuditQuery{After: all[6].ID, Limit: 2}, []int{7, 8}},
		{"after the last", switchboard.AuditQuery{After: all[11].ID}, []int{}},
	} {
		if got := minutes(listAudit(t, s, tt.q)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got entries %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Batches of every size are stored whole and in order, and sizes seen
// before are stored again (a store may keep a statement per size: SQLite
// stores a batch as INSERTs of 64, 32, ... 1 rows).
func testAuditBatchSizes(t *testing.T, open OpenFunc) {
	s := auditStore(t, open)
	n := 0
	for _, size := range []int{1, 2, 3, 7, 63, 64, 65, 130, 1, 63} {
		appendAudit(t, s, n, n+size)
		n += size
	}
	got := listAudit(t, s, switchboard.AuditQuery{Limit: switchboard.MaxAuditLimit})
	if len(got) != n {
		t.Fatalf("listed %d entries, want %d", len(got), n)
	}
	for i, e := range got {
		want := auditEntry(i)
		want.ID = e.ID
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, e, want)
		}
	}
}

// Entries survive a restart, and two processes on one database both
// write and both read every entry (replicas on PostgreSQL).
func testAuditShared(t *testing.T, open OpenFunc) {
	one, two := auditStore(t, open), auditStore(t, open)
	appendAudit(t, one, 0, 3)
	appendAudit(t, two, 3, 5)
	appendAudit(t, one, 5, 6)
	for i, s := range []switchboard.AuditStore{one, two} {
		if got, want := minutes(listAudit(t, s, switchboard.AuditQuery{})), []int{0, 1, 2, 3, 4, 5}; !reflect.DeepEqual(got, want) {
			t.Errorf("store %d lists %v, want %v", i+1, got, want)
		}
	}
	reopened := auditStore(t, open)
	if got := minutes(listAudit(t, reopened, switchboard.AuditQuery{})); len(got) != 6 {
		t.Errorf("reopened store lists %v, want the 6 entries", got)
	}
}

// A reader that follows the log by id (After) sees every entry that two
// processes append at once: no id becomes visible before a smaller one
// that is still being written (the follow of `switchboard audit -f` and
// the web page's).
func testAuditFollowedWhileWritten(t *testing.T, open OpenFunc) {
	one, two := auditStore(t, open), auditStore(t, open)
	const writers, batches = 4, 40
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range writers {
		s := []switchboard.AuditStore{one, two}[w%2]
		wg.Go(func() {
			for b := range batches {
				if err := s.AppendAudit(ctx, []switchboard.AuditEntry{auditEntry(w*batches + b)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := make(map[int64]bool)
	var after int64
	follow := func() {
		es, err := two.ListAudit(ctx, switchboard.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			seen[e.ID] = true
			after = max(after, e.ID)
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		follow()
	}
	follow()
	all := listAudit(t, one, switchboard.AuditQuery{Limit: 1000})
	if len(all) != writers*batches {
		t.Fatalf("%d entries stored, want %d", len(all), writers*batches)
	}
	var missed []int64
	for _, e := range all {
		if !seen[e.ID] {
			missed = append(missed, e.ID)
		}
	}
	if len(missed) > 0 {
		t.Errorf("following by id missed %d of %d entries (ids %v): they became visible after a larger id", len(missed), len(all), missed)
	}
}

func testAuditTrim(t *testing.T, open OpenFunc) {
	s := auditStore(t, open)
	ctx := context.Background()
	appendAudit(t, s, 0, 20)
	trim := func(before time.Time, keep int64, max int) int64 {
		t.Helper()
		n, err := s.TrimAudit(ctx, before, keep, max)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// By age, at most max per pass: entries 0-9 are older than minute 10.
	if n := trim(auditEpoch.Add(10*time.Minute), 0, 4); n != 4 {
		t.Errorf("a pass of at most 4 deleted %d", n)
	}
	if got := minutes(listAudit(t, s, switchboard.AuditQuery{Limit: 1000}))[0]; got != 4 {
		t.Errorf("the oldest entry left is %d, want 4 (the oldest go first)", got)
	}
	if n := trim(auditEpoch.Add(10*time.Minute), 0, 100); n != 6 {
		t.Errorf("the second pass deleted %d, want the 6 older left", n)
	}
	if n := trim(auditEpoch.Add(10*time.Minute), 0, 100); n != 0 {
		t.Errorf("a third pass deleted %d, want 0", n)
	}
	// By rows: keep the newest 3 of the 10 left.
	if n := trim(time.Time{}, 3, 5); n != 5 {
		t.Errorf("a pass of at most 5 deleted %d", n)
	}
	if n := trim(time.Time{}, 3, 100); n != 2 {
		t.Errorf("the second pass deleted %d, want 2", n)
	}
	if got, want := minutes(listAudit(t, s, switchboard.AuditQuery{Limit: 1000})), []int{17, 18, 19}; !reflect.DeepEqual(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if n := trim(time.Time{}, 3, 100); n != 0 {
		t.Errorf("a pass with nothing beyond keep deleted %d", n)
	}
}
