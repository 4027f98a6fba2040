package httpapi

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// The filters of GET /api/v1/audit: times as RFC 3339 or a duration
// before now, whole numbers within bounds, anything else a bad request.
func TestAuditQueryReadsItsFilters(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := httptest.NewRequest("GET", "/api/v1/audit?server=a&tool=echo&principal=ci&outcome=timeout&since=90m&until=2026-03-01T11:59:00Z&limit=20&after=7", nil)
	q, err := auditQuery(r, now)
	if err != nil {
		t.Fatal(err)
	}
	want := sb.AuditQuery{Server: "a", Name: "echo", Principal: "ci", Outcome: "timeout", Since: now.Add(-90 * time.Minute),
		Until: now.Add(-time.Minute), Limit: 20, After: 7}
	if q != want {
		t.Errorf("query %+v, want %+v", q, want)
	}
	for _, bad := range []string{"since=yesterday", "until=-1h", "limit=10001", "limit=-1", "after=x"} {
		_, err := auditQuery(httptest.NewRequest("GET", "/api/v1/audit?"+bad, nil), now)
		if !errors.Is(err, errBadRequest) {
			t.Errorf("%s: %v, want a bad request", bad, err)
		}
	}
}
