package client

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// AuditFilter selects audit entries (GET /api/v1/audit); empty fields
// select everything. Since and Until are RFC 3339 times or durations
// before now ("1h"), as the API reads them.
type AuditFilter struct {
	Server, Tool, Principal, Outcome string
	Since, Until                     string
	After                            int64 // entries after this ID, the oldest first
	Limit                            int   // 0: the API's default (100)
}

// Audit returns the entries f selects, oldest first: the newest Limit,
// or with After the first Limit after it.
func (c *Client) Audit(ctx context.Context, f AuditFilter) ([]api.AuditEntry, error) {
	q := url.Values{}
	for k, v := range map[string]string{"server": f.Server, "tool": f.Tool, "principal": f.Principal, "outcome": f.Outcome,
		"since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	path := "/api/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body api.AuditList
	err := c.do(ctx, http.MethodGet, path, nil, &body)
	return body.Entries, err
}

// FollowAudit calls fn with the entries f selects, then with every new
// one, polling every interval (one second if zero), until ctx ends or fn
// or a request fails. Entries another replica writes are seen too: they
// are read from the shared database.
func (c *Client) FollowAudit(ctx context.Context, f AuditFilter, interval time.Duration, fn func(api.AuditEntry) error) error {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		es, err := c.Audit(ctx, f)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := fn(e); err != nil {
				return err
			}
			f.After = max(f.After, e.ID)
		}
		// A full page may have more behind it: read on at once.
		if len(es) < cmp.Or(f.Limit, sb.DefaultAuditLimit) {
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}
