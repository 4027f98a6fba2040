package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// SaveOAuthPending stores an authorization waiting for its callback, and
// drops those that expired.
func (s *Store) SaveOAuthPending(ctx context.Context, id, server string, sealed []byte, expires time.Time) error {
	err := s.retried(ctx, func() error {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_pending WHERE expires_at <= now()`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_pending (id, server, sealed, expires_at) VALUES ($1, $2, $3, $4)`,
			id, server, sealed, expires); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return fmt.Errorf("postgres: save oauth pending %q: %w", server, err)
	}
	return nil
}

// TakeOAuthPending deletes and returns the authorization stored under id
// if it has not expired, in one statement: of two callbacks with the same
// state, on two replicas at once, one gets it.
func (s *Store) TakeOAuthPending(ctx context.Context, id string) (server string, sealed []byte, err error) {
	var live bool
	err = s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx, `DELETE FROM oauth_pending WHERE id = $1 RETURNING server, sealed, expires_at > now()`, id).
			Scan(&server, &sealed, &live)
	})
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !live {
		return "", nil, switchboard.ErrNotFound
	}
	if err != nil {
		return "", nil, fmt.Errorf("postgres: take oauth pending: %w", err)
	}
	return server, sealed, nil
}

// OAuthPending reports whether an unexpired authorization of server waits.
func (s *Store) OAuthPending(ctx context.Context, server string) (bool, error) {
	var pending bool
	err := s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM oauth_pending WHERE server = $1 AND expires_at > now())`, server).
			Scan(&pending)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: oauth pending %q: %w", server, err)
	}
	return pending, nil
}
