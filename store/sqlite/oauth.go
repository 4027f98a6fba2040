package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.OAuthStore = (*Store)(nil)

// LoadOAuthGrant returns the sealed OAuth grant of server, or
// [switchboard.ErrNotFound].
func (s *Store) LoadOAuthGrant(ctx context.Context, server string) ([]byte, error) {
	var sealed []byte
	err := s.db.QueryRowContext(ctx, `SELECT sealed FROM oauth_grants WHERE server = ?`, server).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, switchboard.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: load oauth grant %q: %w", server, err)
	}
	return sealed, nil
}

// SaveOAuthGrant stores the sealed OAuth grant of server, replacing any.
func (s *Store) SaveOAuthGrant(ctx context.Context, server string, sealed []byte) error {
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES (?, ?, ?)
		 ON CONFLICT (server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		server, sealed, now().Format(timeFormat))
	if err != nil {
		return fmt.Errorf("sqlite: save oauth grant %q: %w", server, err)
	}
	return nil
}

// DeleteOAuthGrant removes the OAuth grant of server, if any.
func (s *Store) DeleteOAuthGrant(ctx context.Context, server string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_grants WHERE server = ?`, server); err != nil {
		return fmt.Errorf("sqlite: delete oauth grant %q: %w", server, err)
	}
	return nil
}
