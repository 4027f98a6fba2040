// Package postgres is a [switchboard.Store] kept in PostgreSQL. It is safe
// for several processes to use one database at once: an update or delete
// that names a version fails if the stored version moved on, and migrations
// run one at a time under an advisory lock. Every committed write is also
// announced with NOTIFY from the writing transaction (a trigger, see
// migrations/00002_notify.sql), and [Store.Watch] LISTENs for them, so that
// several Switchboard replicas sharing the database apply each other's
// changes within moments (package registry, sync.go).
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/switchboard-mcp/switchboard"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable is goose's bookkeeping table. It is named after
// Switchboard rather than goose's default so that a database shared with
// another goose-migrated program cannot mix the two version histories.
const migrationsTable = "switchboard_schema_migrations"

// migrationLockID is the key of the advisory lock that serializes migrations
// of replicas starting at once: crc32("switchboard"), rather than goose's
// default, so an unrelated goose user of the same database does not wait
// for us or we for it.
const migrationLockID int64 = 0x0085b47f

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// Store is a [switchboard.Store] backed by PostgreSQL. It is safe for
// concurrent use, also by several processes sharing the database.
type Store struct {
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig // for Watch's own connection
	log        *slog.Logger
}

var _ switchboard.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// or
// postgresql:// URL, or key=value pairs as libpq takes them) and migrates
// its schema to the newest version. Replicas may call Open at the same time:
// migrations run one at a time under an advisory lock.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := migrate(ctx, cfg.ConnConfig); err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return &Store{pool: pool, connConfig: cfg.ConnConfig, log: slog.Default()}, nil
}

// SetLogger sets where Watch logs its lost connections; slog.Default() if
// never called. Call it before Watch.
func (s *Store) SetLogger(l *slog.Logger) { s.log = l }

// migrate runs the embedded migrations through database/sql, which goose
// needs, on a short-lived connection of its own.
func migrate(ctx context.Context, cc *pgx.ConnConfig) (err error) {
	db := stdlib.OpenDB(*cc.Copy())
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close migration connection: %w", cerr)
		}
	}()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	// A session-level advisory lock, held on goose's connection while it
	// checks and applies migrations, so two replicas starting together do
	// not both create the tables. Retry every second for up to five
	// minutes: the other replica's migrations take milliseconds, a stuck
	// one should fail startup rather than hang it.
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(migrationLockID),
		lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName(migrationsTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes every connection of the store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// List returns every server, ordered by name.
func (s *Store) List(ctx context.Context) ([]switchboard.StoredServer, error) {
	// COLLATE "C" orders by bytes, as SQLite does, whatever the database's
	// locale: under en_US a '-' is ignored at first and "a-c" sorts after
	// "ab".
	var out []switchboard.StoredServer
	err := s.retried(ctx, func() error {
		rows, err := s.pool.Query(ctx,
			`SELECT config, version, created_at, updated_at FROM servers ORDER BY name COLLATE "C"`)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []switchboard.StoredServer{}
		for rows.Next() {
			srv, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, srv)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	return out, nil
}

// Get returns the server named name, or an error wrapping
// [switchboard.ErrNotFound].
func (s *Store) Get(ctx context.Context, name string) (switchboard.StoredServer, error) {
	if name == "" {
		return switchboard.StoredServer{}, errors.New("postgres: get: empty server name")
	}
	var srv switchboard.StoredServer
	err := s.retried(ctx, func() (err error) {
		srv, err = scan(s.pool.QueryRow(ctx,
			`SELECT config, version, created_at, updated_at FROM servers WHERE name = $1`, name))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = switchboard.ErrNotFound
	}
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("postgres: get %q: %w", name, err)
	}
	return srv, nil
}

// Create stores cfg at version 1, or fails with an error wrapping
// [switchboard.ErrExists]. It does not validate cfg.
func (s *Store) Create(ctx context.Context, cfg *switchboard.ServerConfig) (switchboard.StoredServer, error) {
	data, err := encode(cfg)
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("postgres: create: %w", err)
	}
	// ON CONFLICT DO NOTHING lets the primary key decide atomically: of two
	// concurrent creates, one inserts and the other gets no row back, and
	// no duplicate-key ERROR lands in the server's log.
	out := switchboard.StoredServer{Config: *cfg.Clone(), Version: 1}
	err = s.retried(ctx, func() error {
		return s.pool.QueryRow(ctx,
			`INSERT INTO servers (name, config, version, created_at, updated_at)
			 VALUES ($1, $2, 1, now(), now()) ON CONFLICT (name) DO NOTHING
			 RETURNING created_at`,
			cfg.Name, data).Scan(&out.CreatedAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = switchboard.ErrExists
	}
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("postgres: create %q: %w", cfg.Name, mapErr(err))
	}
	out.CreatedAt = out.CreatedAt.UTC()
	out.UpdatedAt = out.CreatedAt
	return out, nil
}

// Update replaces the config of the server named cfg.Name. If version is not
// zero it must equal the stored version, else the error wraps
// [switchboard.ErrConflict]; a missing server gives [switchboard.ErrNotFound].
func (s *Store) Update(ctx context.Context, cfg *switchboard.ServerConfig, version int64) (switchboard.StoredServer, error) {
	data, err := encode(cfg)
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("postgres: update: %w", err)
	}
	out := switchboard.StoredServer{Config: *cfg.Clone()}
	err = s.retried(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			// Under READ COMMITTED, concurrent updaters of one row queue on its
			// lock and each re-checks the WHERE against the row the previous
			// one committed: of several writers holding the same version,
			// exactly one matches.
			err := tx.QueryRow(ctx,
				`UPDATE servers SET config = $2, version = version + 1, updated_at = now()
			 WHERE name = $1 AND ($3::bigint = 0 OR version = $3::bigint)
			 RETURNING version, created_at, updated_at`,
				cfg.Name, data, version).Scan(&out.Version, &out.CreatedAt, &out.UpdatedAt)
			if errors.Is(err, pgx.ErrNoRows) {
				return missingOrConflict(ctx, tx, cfg.Name)
			}
			return err
		})
	})
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("postgres: update %q: %w", cfg.Name, err)
	}
	out.CreatedAt, out.UpdatedAt = out.CreatedAt.UTC(), out.UpdatedAt.UTC()
	return out, nil
}

// Delete removes the server named name. If version is not zero it must equal
// the stored version, else the error wraps [switchboard.ErrConflict]; a
// missing server gives [switchboard.ErrNotFound].
func (s *Store) Delete(ctx context.Context, name string, version int64) error {
	if name == "" {
		return errors.New("postgres: delete: empty server name")
	}
	err := s.retried(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx,
				`DELETE FROM servers WHERE name = $1 AND ($2::bigint = 0 OR version = $2::bigint)`,
				name, version)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return missingOrConflict(ctx, tx, name)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: delete %q: %w", name, err)
	}
	return nil
}

// missingOrConflict explains why a guarded write matched no row: the server
// is gone, or its version moved on. Under READ COMMITTED the check sees
// every commit made before it, so a row the write skipped because another
// transaction changed it is reported as a conflict, one that was deleted as
// not found.
func missingOrConflict(ctx context.Context, tx pgx.Tx, name string) error {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM servers WHERE name = $1)`, name).Scan(&exists)
	switch {
	case err != nil:
		return err
	case exists:
		return switchboard.ErrConflict
	default:
		return switchboard.ErrNotFound
	}
}

// adminShutdown is PostgreSQL's SQLSTATE for a backend ended by
// pg_terminate_backend or a fast shutdown.
const adminShutdown = "57P01"

// retryAttempts bounds retried: every idle connection of the pool may be
// dead at once (all terminated), and each is found out by using it.
const retryAttempts = 4

// retried runs op, and again (up to retryAttempts in all) while it fails
// because its pooled connection had died before the statement ran: a
// backend terminated by pg_terminate_backend, or a restarted server, is
// noticed only by the next query on it, and the pool replaces it. A
// terminated backend aborts its transaction, so the write did not happen;
// should it have (the termination racing the COMMIT), the retry of a
// versioned write fails with ErrConflict, ErrExists or ErrNotFound
// rather than applying twice.
//
// The first lost connection empties the pool (Reset): the rest of its idle
// connections are likely dead too (a terminated backend is usually one of
// all of them), and finding that out one query at a time could spend every
// attempt of a writer on corpses.
func (s *Store) retried(ctx context.Context, op func() error) error {
	err := op()
	for range retryAttempts - 1 {
		if err == nil || ctx.Err() != nil || !connectionLost(err) {
			return err
		}
		s.pool.Reset()
		err = op()
	}
	return err
}

func connectionLost(err error) bool {
	var pe *pgconn.PgError
	return pgconn.SafeToRetry(err) || (errors.As(err, &pe) && pe.Code == adminShutdown)
}

// mapErr turns a duplicate-key error into ErrExists; the sentinels and
// other errors pass through. Create avoids the violation with ON CONFLICT,
// so this is a safety net.
func mapErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation {
		return fmt.Errorf("%w (%v)", switchboard.ErrExists, err)
	}
	return err
}

// encode checks what the store itself needs of cfg (not its validity, which
// is the caller's job) and marshals it.
func encode(cfg *switchboard.ServerConfig) ([]byte, error) {
	if cfg == nil {
		return nil, errors.New("nil server config")
	}
	if cfg.Name == "" {
		return nil, errors.New("server config has an empty name")
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("marshal config %q: %w", cfg.Name, err)
	}
	return data, nil
}

func scan(row pgx.Row) (switchboard.StoredServer, error) {
	var (
		srv              switchboard.StoredServer
		data             []byte
		created, updated time.Time
	)
	if err := row.Scan(&data, &srv.Version, &created, &updated); err != nil {
		return srv, err
	}
	if err := json.Unmarshal(data, &srv.Config); err != nil {
		return srv, fmt.Errorf("decode stored config: %w", err)
	}
	srv.CreatedAt, srv.UpdatedAt = created.UTC(), updated.UTC()
	return srv, nil
}
