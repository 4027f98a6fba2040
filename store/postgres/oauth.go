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
	sealed, _, err := s.LoadOAuthGrantVersion(ctx, server)
	return sealed, err
}

// LoadOAuthGrantVersion returns the sealed OAuth grant of server and its
// version, or [switchboard.ErrNotFound].
func (s *Store) LoadOAuthGrantVersion(ctx context.Context, server string) ([]byte, int64, error) {
	var (
		sealed  []byte
		version int64
	)
	err := s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT sealed, version FROM oauth_grants WHERE server = $1`, server).Scan(&sealed, &version)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, switchboard.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: load oauth grant %q: %w", server, err)
	}
	return sealed, version, nil
}

// SaveOAuthGrant stores the sealed OAuth grant of server, replacing any.
func (s *Store) SaveOAuthGrant(ctx context.Context, server string, sealed []byte) error {
	err := s.retried(ctx, func() error {
		_, err := s.pool.Exec(ctx,
			`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES ($1, $2, now())
			 ON CONFLICT (server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at,
			 version = oauth_grants.version + 1`,
			server, sealed)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: save oauth grant %q: %w", server, err)
	}
	return nil
}

// SwapOAuthGrant stores the sealed OAuth grant of server if its version
// is still version (0: none is stored), in one statement, and returns the
// new version; [switchboard.ErrConflict] otherwise. Of two replicas that
// read one version, one writes.
func (s *Store) SwapOAuthGrant(ctx context.Context, server string, version int64, sealed []byte) (int64, error) {
	var next int64
	err := s.retried(ctx, func() error {
		if version == 0 {
			return s.pool.QueryRow(ctx,
				`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES ($1, $2, now())
				 ON CONFLICT (server) DO NOTHING RETURNING version`, server, sealed).Scan(&next)
		}
		return s.pool.QueryRow(ctx,
			`UPDATE oauth_grants SET sealed = $1, updated_at = now(), version = version + 1
			 WHERE server = $2 AND version = $3 RETURNING version`, sealed, server, version).Scan(&next)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: the oauth grant of %q was written meanwhile", switchboard.ErrConflict, server)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: save oauth grant %q: %w", server, err)
	}
	return next, nil
}

// ClaimOAuthRefresh claims the refresh of server's grant for holder for
// ttl by the database's clock, unless another holder's claim has not
// expired, in one statement: of replicas claiming at once, one gets it.
// Nothing is held meanwhile (no connection, no lock): a replica waiting
// for another's refresh costs the pool nothing.
func (s *Store) ClaimOAuthRefresh(ctx context.Context, server, holder string, ttl time.Duration) (bool, error) {
	var n int64
	err := s.retried(ctx, func() error {
		tag, err := s.pool.Exec(ctx,
			`INSERT INTO oauth_refreshes (server, holder, expires_at) VALUES ($1, $2, now() + $3::float8 * interval '1 second')
			 ON CONFLICT (server) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			 WHERE oauth_refreshes.expires_at <= now() OR oauth_refreshes.holder = excluded.holder`,
			server, holder, ttl.Seconds())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: claim oauth refresh %q: %w", server, err)
	}
	return n == 1, nil
}

// ReleaseOAuthRefresh ends holder's claim of server's refresh.
func (s *Store) ReleaseOAuthRefresh(ctx context.Context, server, holder string) error {
	err := s.retried(ctx, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM oauth_refreshes WHERE server = $1 AND holder = $2`, server, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: release oauth refresh %q: %w", server, err)
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
