package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.AuditStore = (*Store)(nil)

// auditColumns are the columns of audit_log that scanAudit reads, in order.
const auditColumns = `id, at, principal, surface, toolset, kind, server, name, outcome, duration_us, request_bytes, result_bytes, args_sha256, arguments`

// auditRowsPerInsert is how many entries one INSERT stores at most: a
// statement per row cost the writer some 20 µs of CPU an entry
// (database/sql's and the driver's work per statement), several times
// what SQLite's own work is.
const auditRowsPerInsert = 1 << (auditInsertSizes - 1)

// auditInsertSizes is how many INSERTs of the audit log there are, one of
// each power of two rows up to auditRowsPerInsert: a batch is stored by
// the largest that fit, in turn (60 entries: 32, 16, 8 and 4 rows).
const auditInsertSizes = 7

// auditInserts are the INSERTs of the audit log, each prepared once for
// the store's life: SQLite's (modernc's) parse of one costs some 40,000
// instructions a row, more than storing the row does, and before, every
// batch short of a full INSERT (every batch of a daemon serving fewer
// than 64 calls a second) had a statement of its own length parsed.
type auditInserts struct {
	mu    sync.Mutex
	stmts [auditInsertSizes]*sql.Stmt // stmts[k] stores 1<<k rows
}

// auditInsert returns the prepared INSERT of 1<<k rows.
func (s *Store) auditInsert(ctx context.Context, k int) (*sql.Stmt, error) {
	s.inserts.mu.Lock()
	defer s.inserts.mu.Unlock()
	if st := s.inserts.stmts[k]; st != nil {
		return st, nil
	}
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	st, err := s.db.PrepareContext(ctx, `INSERT INTO audit_log (at, principal, surface, toolset, kind, server, name, outcome,
		duration_us, request_bytes, result_bytes, args_sha256, arguments) VALUES `+row+strings.Repeat(", "+row, 1<<k-1))
	if err != nil {
		return nil, err
	}
	s.inserts.stmts[k] = st
	return st, nil
}

// closeAuditInserts closes the prepared INSERTs, for Close.
func (s *Store) closeAuditInserts() {
	s.inserts.mu.Lock()
	defer s.inserts.mu.Unlock()
	for k, st := range s.inserts.stmts {
		if st != nil {
			st.Close()
			s.inserts.stmts[k] = nil
		}
	}
}

// insertSize is the k of the INSERT (1<<k rows) that stores the first
// rows of n entries.
func insertSize(n int) int { return bits.Len(uint(min(n, auditRowsPerInsert))) - 1 }

// AppendAudit stores entries in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []switchboard.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	// The INSERTs are prepared before the transaction begins: it holds
	// the store's one connection, which preparing would wait for.
	var inserts [auditInsertSizes]*sql.Stmt
	for n := len(entries); n > 0; n -= 1 << insertSize(n) {
		k := insertSize(n)
		if inserts[k] != nil {
			continue
		}
		st, err := s.auditInsert(ctx, k)
		if err != nil {
			return fmt.Errorf("sqlite: append audit: %w", dbErr(err))
		}
		inserts[k] = st
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: append audit: %w", dbErr(err))
	}
	defer tx.Rollback()
	for k, st := range inserts {
		if st != nil {
			inserts[k] = tx.StmtContext(ctx, st) // the connection's prepared statement, closed with tx
		}
	}
	args := make([]any, 0, 13*min(len(entries), auditRowsPerInsert))
	for len(entries) > 0 {
		k := insertSize(len(entries))
		chunk := entries[:1<<k]
		entries = entries[len(chunk):]
		args = args[:0]
		for _, e := range chunk {
			var a sql.NullString
			if e.Arguments != nil {
				a = sql.NullString{String: string(e.Arguments), Valid: true}
			}
			args = append(args, e.Time.UTC().Truncate(time.Microsecond).Format(timeFormat), e.Principal, e.Surface,
				e.Toolset, string(e.Kind), e.Server, e.Name, e.Outcome, e.Duration.Microseconds(), e.RequestBytes, e.ResultBytes,
				e.ArgsSHA256, a)
		}
		if _, err := inserts[k].ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("sqlite: append audit: %w", dbErr(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: append audit: %w", dbErr(err))
	}
	return nil
}

// ListAudit returns the entries q selects, oldest first.
func (s *Store) ListAudit(ctx context.Context, q switchboard.AuditQuery) ([]switchboard.AuditEntry, error) {
	var where []string
	var args []any
	add := func(cond string, v any) { where, args = append(where, cond), append(args, v) }
	for _, f := range []struct{ col, v string }{{"server", q.Server}, {"name", q.Name}, {"principal", q.Principal}, {"outcome", q.Outcome}} {
		if f.v != "" {
			add(f.col+" = ?", f.v)
		}
	}
	if !q.Since.IsZero() {
		add("at >= ?", q.Since.UTC().Truncate(time.Microsecond).Format(timeFormat))
	}
	if !q.Until.IsZero() {
		add("at < ?", q.Until.UTC().Truncate(time.Microsecond).Format(timeFormat))
	}
	order := "DESC"
	if q.After > 0 {
		add("id > ?", q.After)
		order = "ASC"
	}
	query := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id ` + order + ` LIMIT ?`
	args = append(args, auditLimit(q.Limit))
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", dbErr(err))
	}
	defer rows.Close()
	out := []switchboard.AuditEntry{}
	for rows.Next() {
		var (
			e        switchboard.AuditEntry
			at, kind string
			us       int64
			a        sql.NullString
		)
		if err := rows.Scan(&e.ID, &at, &e.Principal, &e.Surface, &e.Toolset, &kind, &e.Server, &e.Name, &e.Outcome,
			&us, &e.RequestBytes, &e.ResultBytes, &e.ArgsSHA256, &a); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", dbErr(err))
		}
		if e.Time, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", err)
		}
		e.Kind, e.Duration = switchboard.AuditKind(kind), time.Duration(us)*time.Microsecond
		if a.Valid {
			e.Arguments = []byte(a.String)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", dbErr(err))
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
// before or beyond the newest keep.
func (s *Store) TrimAudit(ctx context.Context, before time.Time, keep int64, max int) (int64, error) {
	var n int64
	if !before.IsZero() && max > 0 {
		res, err := s.db.ExecContext(ctx,
			`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY id LIMIT ?)`,
			before.UTC().Truncate(time.Microsecond).Format(timeFormat), max)
		if err != nil {
			return 0, fmt.Errorf("sqlite: trim audit: %w", dbErr(err))
		}
		n, _ = res.RowsAffected()
	}
	if keep > 0 && int64(max) > n {
		// The id of the oldest entry kept: those below it go.
		var cut int64
		err := s.db.QueryRowContext(ctx, `SELECT id FROM audit_log ORDER BY id DESC LIMIT 1 OFFSET ?`, keep-1).Scan(&cut)
		if errors.Is(err, sql.ErrNoRows) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("sqlite: trim audit: %w", dbErr(err))
		}
		res, err := s.db.ExecContext(ctx,
			`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE id < ? ORDER BY id LIMIT ?)`, cut, int64(max)-n)
		if err != nil {
			return n, fmt.Errorf("sqlite: trim audit: %w", dbErr(err))
		}
		m, _ := res.RowsAffected()
		n += m
	}
	return n, nil
}
