package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.AuditStore = (*Store)(nil)

// auditAppendLock is the advisory lock key that orders the replicas'
// appends to the audit log.
const auditAppendLock = 0x5357_6175_6469_74 // "SWaudit"

// AppendAudit stores entries with one COPY: a batch of a thousand is one
// round trip, whichever replica writes it.
//
// The appends of all replicas take one advisory lock until they commit,
// so that ids become visible in the order they were given: a reader that
// follows the log by id (GET /api/v1/audit?after=ID) never sees an id
// after a smaller one that commits later, and so never skips one. Without
// it, two replicas' batches in flight at once committed out of id order,
// and `switchboard audit -f` on one replica lost the other's entry.
func (s *Store) AppendAudit(ctx context.Context, entries []switchboard.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	cols := []string{"at", "principal", "surface", "toolset", "kind", "server", "name", "outcome",
		"duration_us", "request_bytes", "result_bytes", "args_sha256", "arguments"}
	err := s.retried(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(auditAppendLock)); err != nil {
				return err
			}
			return copyAudit(ctx, tx, cols, entries)
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: append audit: %w", err)
	}
	return nil
}

// copyAudit writes entries with COPY in tx.
func copyAudit(ctx context.Context, tx pgx.Tx, cols []string, entries []switchboard.AuditEntry) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"audit_log"}, cols, pgx.CopyFromSlice(len(entries), func(i int) ([]any, error) {
		e := &entries[i]
		var args *string
		if e.Arguments != nil {
			a := string(e.Arguments)
			args = &a
		}
		return []any{e.Time.UTC(), e.Principal, e.Surface, e.Toolset, string(e.Kind), e.Server, e.Name, e.Outcome,
			e.Duration.Microseconds(), e.RequestBytes, e.ResultBytes, e.ArgsSHA256, args}, nil
	}))
	return err
}

// ListAudit returns the entries q selects, oldest first.
func (s *Store) ListAudit(ctx context.Context, q switchboard.AuditQuery) ([]switchboard.AuditEntry, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	for _, f := range []struct{ col, v string }{{"server", q.Server}, {"name", q.Name}, {"principal", q.Principal}, {"outcome", q.Outcome}} {
		if f.v != "" {
			add(f.col+" =", f.v)
		}
	}
	if !q.Since.IsZero() {
		add("at >=", q.Since.UTC())
	}
	if !q.Until.IsZero() {
		add("at <", q.Until.UTC())
	}
	order := "DESC"
	if q.After > 0 {
		add("id >", q.After)
		order = "ASC"
	}
	query := `SELECT id, at, principal, surface, toolset, kind, server, name, outcome, duration_us, request_bytes, result_bytes,
		args_sha256, arguments FROM audit_log`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, auditLimit(q.Limit))
	query += ` ORDER BY id ` + order + ` LIMIT $` + strconv.Itoa(len(args))
	var out []switchboard.AuditEntry
	err := s.retried(ctx, func() error {
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []switchboard.AuditEntry{}
		for rows.Next() {
			var (
				e    switchboard.AuditEntry
				kind string
				us   int64
				a    *string
			)
			if err := rows.Scan(&e.ID, &e.Time, &e.Principal, &e.Surface, &e.Toolset, &kind, &e.Server, &e.Name, &e.Outcome,
				&us, &e.RequestBytes, &e.ResultBytes, &e.ArgsSHA256, &a); err != nil {
				return err
			}
			e.Time, e.Kind, e.Duration = e.Time.UTC(), switchboard.AuditKind(kind), time.Duration(us)*time.Microsecond
			if a != nil {
				e.Arguments = []byte(*a)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list audit: %w", err)
	}
	if q.After == 0 {
		slices.Reverse(out)
	}
	return out, nil
}

// auditLimit is q.Limit within its bounds.
func auditLimit(n int) int {
	switch {
	case n <= 0:
		return switchboard.DefaultAuditLimit
	case n > switchboard.MaxAuditLimit:
		return switchboard.MaxAuditLimit
	}
	return n
}

// TrimAudit deletes at most max of the oldest entries that are older than
// before or beyond the newest keep. Replicas trimming at once delete
// disjoint rows or the same ones; neither fails.
func (s *Store) TrimAudit(ctx context.Context, before time.Time, keep int64, max int) (int64, error) {
	var n int64
	if !before.IsZero() && max > 0 {
		err := s.retried(ctx, func() error {
			tag, err := s.pool.Exec(ctx,
				`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY id LIMIT $2)`, before.UTC(), max)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("postgres: trim audit: %w", err)
		}
	}
	if keep > 0 && int64(max) > n {
		var m int64
		err := s.retried(ctx, func() error {
			var cut int64
			err := s.pool.QueryRow(ctx, `SELECT id FROM audit_log ORDER BY id DESC LIMIT 1 OFFSET $1`, keep-1).Scan(&cut)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			tag, err := s.pool.Exec(ctx,
				`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE id < $1 ORDER BY id LIMIT $2)`, cut, int64(max)-n)
			m = tag.RowsAffected()
			return err
		})
		if err != nil {
			return n, fmt.Errorf("postgres: trim audit: %w", err)
		}
		n += m
	}
	return n, nil
}
