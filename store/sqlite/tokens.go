package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.TokenStore = (*Store)(nil)

// ListTokens returns every token, ordered by name.
func (s *Store) ListTokens(ctx context.Context) ([]switchboard.StoredToken, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT name, hash, scopes, created_at, last_used_at FROM tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tokens: %w", dbErr(err))
	}
	defer rows.Close()
	out := []switchboard.StoredToken{}
	for rows.Next() {
		var (
			t       switchboard.StoredToken
			hash    []byte
			scopes  []byte
			created string
			used    sql.NullString
		)
		if err := rows.Scan(&t.Name, &hash, &scopes, &created, &used); err != nil {
			return nil, fmt.Errorf("sqlite: list tokens: %w", dbErr(err))
		}
		copy(t.Hash[:], hash)
		if err := json.Unmarshal(scopes, &t.Scopes); err != nil {
			return nil, fmt.Errorf("sqlite: list tokens: decode scopes of %q: %w", t.Name, dbErr(err))
		}
		if t.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("sqlite: list tokens: %w", dbErr(err))
		}
		if used.Valid {
			at, err := parseTime(used.String)
			if err != nil {
				return nil, fmt.Errorf("sqlite: list tokens: %w", dbErr(err))
			}
			t.LastUsedAt = &at
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tokens: %w", dbErr(err))
	}
	return out, nil
}

// CreateToken stores t (its CreatedAt is set to now), or fails with an
// error wrapping [switchboard.ErrTokenExists].
func (s *Store) CreateToken(ctx context.Context, t *switchboard.StoredToken) error {
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return fmt.Errorf("sqlite: create token: %w", dbErr(err))
	}
	t.CreatedAt = now()
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO tokens (name, hash, scopes, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		t.Name, t.Hash[:], scopes, t.CreatedAt.Format(timeFormat))
	if err != nil {
		return fmt.Errorf("sqlite: create token %q: %w", t.Name, dbErr(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: create token %q: %w", t.Name, dbErr(err))
	} else if n == 0 {
		return fmt.Errorf("sqlite: create token %q: %w", t.Name, switchboard.ErrTokenExists)
	}
	return nil
}

// DeleteToken revokes the token named name, or fails with an error
// wrapping [switchboard.ErrTokenNotFound].
func (s *Store) DeleteToken(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tokens WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("sqlite: revoke token %q: %w", name, dbErr(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: revoke token %q: %w", name, dbErr(err))
	} else if n == 0 {
		return fmt.Errorf("sqlite: revoke token %q: %w", name, switchboard.ErrTokenNotFound)
	}
	return nil
}

// TouchToken records that the token named name was used at when.
func (s *Store) TouchToken(ctx context.Context, name string, when time.Time) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE name = ?`,
		when.UTC().Truncate(time.Microsecond).Format(timeFormat), name); err != nil {
		return fmt.Errorf("sqlite: touch token %q: %w", name, dbErr(err))
	}
	return nil
}
