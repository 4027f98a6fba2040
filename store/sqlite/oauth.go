package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
	err := s.db.QueryRowContext(ctx, `SELECT sealed, version FROM oauth_grants WHERE server = ?`, server).Scan(&sealed, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, switchboard.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: load oauth grant %q: %w", server, dbErr(err))
	}
	return sealed, version, nil
}

// SaveOAuthGrant stores the sealed OAuth grant of server, replacing any.
func (s *Store) SaveOAuthGrant(ctx context.Context, server string, sealed []byte) error {
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES (?, ?, ?)
		 ON CONFLICT (server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at,
		 version = oauth_grants.version + 1`,
		server, sealed, now().Format(timeFormat))
	if err != nil {
		return fmt.Errorf("sqlite: save oauth grant %q: %w", server, dbErr(err))
	}
	return nil
}

// SwapOAuthGrant stores the sealed OAuth grant of server if its version
// is still version (0: none is stored), in one statement, and returns the
// new version; [switchboard.ErrConflict] otherwise.
func (s *Store) SwapOAuthGrant(ctx context.Context, server string, version int64, sealed []byte) (int64, error) {
	var (
		next int64
		err  error
	)
	at := now().Format(timeFormat)
	if version == 0 {
		err = s.db.QueryRowContext(ctx,
			`INSERT INTO oauth_grants (server, sealed, updated_at) VALUES (?, ?, ?)
			 ON CONFLICT (server) DO NOTHING RETURNING version`, server, sealed, at).Scan(&next)
	} else {
		err = s.db.QueryRowContext(ctx,
			`UPDATE oauth_grants SET sealed = ?, updated_at = ?, version = version + 1
			 WHERE server = ? AND version = ? RETURNING version`, sealed, at, server, version).Scan(&next)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: the oauth grant of %q was written meanwhile", switchboard.ErrConflict, server)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: save oauth grant %q: %w", server, err)
	}
	return next, nil
}

// ClaimOAuthRefresh claims the refresh of server's grant for holder for
// ttl, unless another holder's claim has not expired, in one statement.
func (s *Store) ClaimOAuthRefresh(ctx context.Context, server, holder string, ttl time.Duration) (bool, error) {
	at := now()
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO oauth_refreshes (server, holder, expires_at) VALUES (?, ?, ?)
		 ON CONFLICT (server) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		 WHERE oauth_refreshes.expires_at <= ? OR oauth_refreshes.holder = excluded.holder`,
		server, holder, at.Add(ttl).Format(timeFormat), at.Format(timeFormat))
	if err != nil {
		return false, fmt.Errorf("sqlite: claim oauth refresh %q: %w", server, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: claim oauth refresh %q: %w", server, err)
	}
	return n == 1, nil
}

// ReleaseOAuthRefresh ends holder's claim of server's refresh.
func (s *Store) ReleaseOAuthRefresh(ctx context.Context, server, holder string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_refreshes WHERE server = ? AND holder = ?`, server, holder); err != nil {
		return fmt.Errorf("sqlite: release oauth refresh %q: %w", server, err)
	}
	return nil
}

// DeleteOAuthGrant removes the OAuth grant of server, if any.
func (s *Store) DeleteOAuthGrant(ctx context.Context, server string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_grants WHERE server = ?`, server); err != nil {
		return fmt.Errorf("sqlite: delete oauth grant %q: %w", server, dbErr(err))
	}
	return nil
}

// SaveOAuthPending stores an authorization waiting for its callback, and
// drops those that expired.
func (s *Store) SaveOAuthPending(ctx context.Context, id, server string, sealed []byte, expires time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_pending WHERE expires_at <= ?`, now().Format(timeFormat)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_pending (id, server, sealed, expires_at) VALUES (?, ?, ?, ?)`,
			id, server, sealed, expires.UTC().Format(timeFormat))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: save oauth pending %q: %w", server, dbErr(err))
	}
	return nil
}

// TakeOAuthPending deletes and returns the authorization stored under id
// if it has not expired, in one statement.
func (s *Store) TakeOAuthPending(ctx context.Context, id string) (server string, sealed []byte, err error) {
	var expires string
	err = s.db.QueryRowContext(ctx, `DELETE FROM oauth_pending WHERE id = ? RETURNING server, sealed, expires_at`, id).
		Scan(&server, &sealed, &expires)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expires <= now().Format(timeFormat) {
		return "", nil, switchboard.ErrNotFound
	}
	if err != nil {
		return "", nil, fmt.Errorf("sqlite: take oauth pending: %w", dbErr(err))
	}
	return server, sealed, nil
}

// OAuthPending reports whether an unexpired authorization of server waits.
func (s *Store) OAuthPending(ctx context.Context, server string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM oauth_pending WHERE server = ? AND expires_at > ?`,
		server, now().Format(timeFormat)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlite: oauth pending %q: %w", server, dbErr(err))
	}
	return n > 0, nil
}
