package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.TokenStore = (*Store)(nil)

// ListTokens returns every token, ordered by name.
func (s *Store) ListTokens(ctx context.Context) ([]switchboard.StoredToken, error) {
	var out []switchboard.StoredToken
	err := s.retried(ctx, func() error {
		rows, err := s.pool.Query(ctx,
			`SELECT name, hash, scopes, created_at, last_used_at FROM tokens ORDER BY name COLLATE "C"`)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []switchboard.StoredToken{}
		for rows.Next() {
			var (
				t      switchboard.StoredToken
				hash   []byte
				scopes []byte
				used   *time.Time
			)
			if err := rows.Scan(&t.Name, &hash, &scopes, &t.CreatedAt, &used); err != nil {
				return err
			}
			copy(t.Hash[:], hash)
			if err := json.Unmarshal(scopes, &t.Scopes); err != nil {
				return fmt.Errorf("decode scopes of %q: %w", t.Name, err)
			}
			t.CreatedAt = t.CreatedAt.UTC()
			if used != nil {
				at := used.UTC()
				t.LastUsedAt = &at
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list tokens: %w", err)
	}
	return out, nil
}

// CreateToken stores t (its CreatedAt is set to now), or fails with an
// error wrapping [switchboard.ErrTokenExists].
func (s *Store) CreateToken(ctx context.Context, t *switchboard.StoredToken) error {
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	err = s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx,
			`INSERT INTO tokens (name, hash, scopes, created_at) VALUES ($1, $2, $3, now())
			 ON CONFLICT (name) DO NOTHING RETURNING created_at`,
			t.Name, t.Hash[:], scopes).Scan(&t.CreatedAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = switchboard.ErrTokenExists
	}
	if err != nil {
		return fmt.Errorf("postgres: create token %q: %w", t.Name, err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return nil
}

// DeleteToken revokes the token named name, or fails with an error
// wrapping [switchboard.ErrTokenNotFound].
func (s *Store) DeleteToken(ctx context.Context, name string) error {
	var n int64
	err := s.retried(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM tokens WHERE name = $1`, name)
		n = tag.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = switchboard.ErrTokenNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: revoke token %q: %w", name, err)
	}
	return nil
}

// TouchToken records that the token named name was used at when.
func (s *Store) TouchToken(ctx context.Context, name string, when time.Time) error {
	err := s.retried(ctx, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE tokens SET last_used_at = $2 WHERE name = $1`, name, when.UTC())
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: touch token %q: %w", name, err)
	}
	return nil
}
