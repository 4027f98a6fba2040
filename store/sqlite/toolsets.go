package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.ToolsetStore = (*Store)(nil)

// ListToolsets returns every toolset, ordered by name.
func (s *Store) ListToolsets(ctx context.Context) ([]switchboard.StoredToolset, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT toolset, version, created_at, updated_at FROM toolsets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list toolsets: %w", dbErr(err))
	}
	defer rows.Close()
	out := []switchboard.StoredToolset{}
	for rows.Next() {
		t, err := scanToolset(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list toolsets: %w", dbErr(err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list toolsets: %w", dbErr(err))
	}
	return out, nil
}

// GetToolset returns the toolset named name, or an error wrapping
// [switchboard.ErrToolsetNotFound].
func (s *Store) GetToolset(ctx context.Context, name string) (switchboard.StoredToolset, error) {
	t, err := scanToolset(s.db.QueryRowContext(ctx,
		`SELECT toolset, version, created_at, updated_at FROM toolsets WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = switchboard.ErrToolsetNotFound
	}
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: get toolset %q: %w", name, dbErr(err))
	}
	return t, nil
}

// CreateToolset stores t at version 1, or fails with an error wrapping
// [switchboard.ErrToolsetExists]. It does not validate t.
func (s *Store) CreateToolset(ctx context.Context, t *switchboard.Toolset) (switchboard.StoredToolset, error) {
	data, err := encodeToolset(t)
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: create toolset: %w", dbErr(err))
	}
	now := now()
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO toolsets (name, toolset, version, created_at, updated_at)
		 VALUES (?, ?, 1, ?, ?) ON CONFLICT (name) DO NOTHING`,
		t.Name, data, now.Format(timeFormat), now.Format(timeFormat))
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: create toolset %q: %w", t.Name, dbErr(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: create toolset %q: %w", t.Name, dbErr(err))
	} else if n == 0 {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: create toolset %q: %w", t.Name, switchboard.ErrToolsetExists)
	}
	return switchboard.StoredToolset{Toolset: decodedCopy(data), Version: 1, CreatedAt: now, UpdatedAt: now}, nil
}

// UpdateToolset replaces the toolset named t.Name. If version is not zero
// it must equal the stored version, else the error wraps
// [switchboard.ErrToolsetConflict]; a missing toolset gives
// [switchboard.ErrToolsetNotFound].
func (s *Store) UpdateToolset(ctx context.Context, t *switchboard.Toolset, version int64) (switchboard.StoredToolset, error) {
	data, err := encodeToolset(t)
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: update toolset: %w", dbErr(err))
	}
	now := now()
	out := switchboard.StoredToolset{Toolset: decodedCopy(data), UpdatedAt: now}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var created string
		err := tx.QueryRowContext(ctx,
			`UPDATE toolsets SET toolset = ?, version = version + 1, updated_at = ?
			 WHERE name = ? AND (? = 0 OR version = ?)
			 RETURNING version, created_at`,
			data, now.Format(timeFormat), t.Name, version, version).Scan(&out.Version, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return toolsetMissingOrConflict(ctx, tx, t.Name)
		}
		if err != nil {
			return err
		}
		out.CreatedAt, err = parseTime(created)
		return err
	})
	if err != nil {
		return switchboard.StoredToolset{}, fmt.Errorf("sqlite: update toolset %q: %w", t.Name, dbErr(err))
	}
	return out, nil
}

// DeleteToolset removes the toolset named name, with UpdateToolset's
// version rule.
func (s *Store) DeleteToolset(ctx context.Context, name string, version int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`DELETE FROM toolsets WHERE name = ? AND (? = 0 OR version = ?)`, name, version, version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return toolsetMissingOrConflict(ctx, tx, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete toolset %q: %w", name, dbErr(err))
	}
	return nil
}

// toolsetMissingOrConflict is missingOrConflict for a toolset.
func toolsetMissingOrConflict(ctx context.Context, tx *sql.Tx, name string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM toolsets WHERE name = ?`, name).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return switchboard.ErrToolsetNotFound
	case err != nil:
		return err
	default:
		return switchboard.ErrToolsetConflict
	}
}

// encodeToolset checks what the store itself needs of t and marshals it.
func encodeToolset(t *switchboard.Toolset) ([]byte, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("a toolset needs a name")
	}
	return json.Marshal(t)
}

// decodedCopy is the toolset that data encodes: a deep copy of what was
// written, sharing nothing with the caller's.
func decodedCopy(data []byte) switchboard.Toolset {
	var t switchboard.Toolset
	json.Unmarshal(data, &t) // data was just marshalled from a Toolset
	return t
}

func scanToolset(row scanner) (switchboard.StoredToolset, error) {
	var (
		t                switchboard.StoredToolset
		data             []byte
		created, updated string
	)
	if err := row.Scan(&data, &t.Version, &created, &updated); err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t.Toolset); err != nil {
		return t, fmt.Errorf("decode stored toolset: %w", err)
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return t, err
	}
	if t.UpdatedAt, err = parseTime(updated); err != nil {
		return t, err
	}
	return t, nil
}
