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

var _ switchboard.ToolsetStore = (*Store)(nil)

// ListToolsets returns every toolset, ordered by name (bytewise, as List).
func (s *Store) ListToolsets(ctx context.Context) ([]switchboard.StoredToolset, error) {
	var out []switchboard.StoredToolset
	err := s.retried(ctx, func() error {
		rows, err := s.pool.Query(ctx,
			`SELECT toolset, version, created_at, updated_at FROM toolsets ORDER BY name COLLATE "C"`)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []switchboard.StoredToolset{}
		for rows.Next() {
			t, err := scanToolset(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list toolsets: %w", err)
	}
	return out, nil
}

// GetToolset returns the toolset named name, or an error wrapping
// [switchboard.ErrToolsetNotFound].
func (s *Store) GetToolset(ctx context.Context, name string) (switchboard.StoredToolset, error) {
	var t switchboard.StoredToolset
	err := s.retried(ctx, func() (err error) {
		t, err = scanToolset(s.pool.QueryRow(ctx,
			`SELECT toolset, version, created_at, updated_at FROM toolsets WHERE name = $1`, name))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = switchboard.ErrToolsetNotFound
	}
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("postgres: get toolset %q: %w", name, err)
	}
	return t, nil
}

// CreateToolset stores t at version 1, or fails with an error wrapping
// [switchboard.ErrToolsetExists]. It does not validate t.
func (s *Store) CreateToolset(ctx context.Context, t *switchboard.Toolset) (switchboard.StoredToolset, error) {
	data, err := encodeToolset(t)
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("postgres: create toolset: %w", err)
	}
	out := switchboard.StoredToolset{Version: 1}
	json.Unmarshal(data, &out.Toolset) // a deep copy of what was written
	err = s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx,
			`INSERT INTO toolsets (name, toolset, version, created_at, updated_at)
			 VALUES ($1, $2, 1, now(), now()) ON CONFLICT (name) DO NOTHING
			 RETURNING created_at`,
			t.Name, data).Scan(&out.CreatedAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = switchboard.ErrToolsetExists
	}
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("postgres: create toolset %q: %w", t.Name, err)
	}
	out.CreatedAt = out.CreatedAt.UTC()
	out.UpdatedAt = out.CreatedAt
	return out, nil
}

// UpdateToolset replaces the toolset named t.Name. If version is not zero
// it must equal the stored version, else the error wraps
// [switchboard.ErrToolsetConflict]; a missing toolset gives
// [switchboard.ErrToolsetNotFound].
func (s *Store) UpdateToolset(ctx context.Context, t *switchboard.Toolset, version int64) (switchboard.StoredToolset, error) {
	data, err := encodeToolset(t)
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("postgres: update toolset: %w", err)
	}
	var out switchboard.StoredToolset
	json.Unmarshal(data, &out.Toolset)
	err = s.retried(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx,
				`UPDATE toolsets SET toolset = $2, version = version + 1, updated_at = now()
				 WHERE name = $1 AND ($3::bigint = 0 OR version = $3::bigint)
				 RETURNING version, created_at, updated_at`,
				t.Name, data, version).Scan(&out.Version, &out.CreatedAt, &out.UpdatedAt)
			if errors.Is(err, pgx.ErrNoRows) {
				return toolsetMissingOrConflict(ctx, tx, t.Name)
			}
			return err
		})
	})
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("postgres: update toolset %q: %w", t.Name, err)
	}
	out.CreatedAt, out.UpdatedAt = out.CreatedAt.UTC(), out.UpdatedAt.UTC()
	return out, nil
}

// DeleteToolset removes the toolset named name, with UpdateToolset's
// version rule.
func (s *Store) DeleteToolset(ctx context.Context, name string, version int64) error {
	err := s.retried(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx,
				`DELETE FROM toolsets WHERE name = $1 AND ($2::bigint = 0 OR version = $2::bigint)`, name, version)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return toolsetMissingOrConflict(ctx, tx, name)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: delete toolset %q: %w", name, err)
	}
	return nil
}

// toolsetMissingOrConflict is missingOrConflict for a toolset.
func toolsetMissingOrConflict(ctx context.Context, tx pgx.Tx, name string) error {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM toolsets WHERE name = $1)`, name).Scan(&exists)
	switch {
	case err != nil:
		return err
	case exists:
		return switchboard.ErrToolsetConflict
	default:
		return switchboard.ErrToolsetNotFound
	}
}

func encodeToolset(t *switchboard.Toolset) ([]byte, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("a toolset needs a name")
	}
	return json.Marshal(t)
}

func scanToolset(row pgx.Row) (switchboard.StoredToolset, error) {
	var (
		t                switchboard.StoredToolset
		data             []byte
		created, updated time.Time
	)
	if err := row.Scan(&data, &t.Version, &created, &updated); err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t.Toolset); err != nil {
		return t, fmt.Errorf("decode stored toolset: %w", err)
	}
	t.CreatedAt, t.UpdatedAt = created.UTC(), updated.UTC()
	return t, nil
}
