package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-mcp/switchboard"
)

var _ switchboard.OAuthStore = (*Store)(nil)

// LoadOAuthGrant returns the sealed OAuth grant of server, or
// [switchboard.ErrNotFound].
func (s *Store) LoadOAuthGrant(ctx context.Context, server string) ([]byte, error) {
	var sealed []byte
	err := s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT sealed FROM oauth_grants WHERE server = $1`, server).Scan(&sealed)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, switchboard.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: load oauth grant %q: %w", server, err)
	}
	return sealed, nil
}

// SaveOAuthGrant stores the sealed OAuth grant of server, replacing any.
func (s *Store) SaveOAuthGrant(ctx context.Context, server string, sealed []byte) error {
	err := s.retried(ctx, func() error {
		_, err := s.pool.Exec(ctx,
			`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES ($1, $2, now())
			 ON CONFLICT (server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
			server, sealed)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: save oauth grant %q: %w", server, err)
	}
	return nil
}

// DeleteOAuthGrant removes the OAuth grant of server, if any.
func (s *Store) DeleteOAuthGrant(ctx context.Context, server string) error {
	err := s.retried(ctx, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM oauth_grants WHERE server = $1`, server)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete oauth grant %q: %w", server, err)
	}
	return nil
}
