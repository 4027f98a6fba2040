// Package sqlite is a [switchboard.Store] kept in one SQLite file, for a
// single Switchboard process (or a few on one machine). It uses the pure-Go
// driver modernc.org/sqlite, so Switchboard builds without cgo.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/switchboard-mcp/switchboard"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable is goose's bookkeeping table. It is named after
// Switchboard rather than goose's default so that a database file shared with
// another goose-migrated program cannot mix the two version histories.
const migrationsTable = "switchboard_schema_migrations"

// timeFormat stores timestamps as fixed-width UTC text, so they sort as text
// and keep the microsecond precision PostgreSQL has.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// Store is a [switchboard.Store] backed by a SQLite database file. It is safe
// for concurrent use.
type Store struct {
	db      *sql.DB
	path    string
	inserts auditInserts
}

var _ switchboard.Store = (*Store)(nil)

// openFileError says why the database file could not be opened or
// created once ("sqlite: open X: open X: ..." said it twice), and, for a
// missing directory, what to do. It wraps err (an *fs.PathError).
func openFileError(path, abs string, err error) error {
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	msg := fmt.Sprintf("sqlite: open %s: %v", path, cause)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(abs)
		msg = fmt.Sprintf("sqlite: open %s: the directory %s does not exist; create it first (mkdir -p %s)", path, dir, dir)
	}
	return &openError{msg: msg, err: err}
}

// openError is an error of Open with a message of its own.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return e.err }

// Open opens the SQLite database at path, creating the file (mode 0600: it
// holds secrets) if it does not exist, and migrates its schema to the newest
// version. The directory must exist.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
	}
	// Create the file ourselves: SQLite would create it with 0644 less the
	// umask, readable by every local user, and the configs hold API keys.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, openFileError(path, abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
	}
	// A file that already existed keeps the mode it had, which may be
	// world-readable: tighten it, every time.
	if err := os.Chmod(abs, 0o600); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
	}

	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
	}
	// One connection: every statement of this process is serialized in
	// database/sql's pool instead of competing for SQLite's file lock, so
	// SQLITE_BUSY cannot arise between our own goroutines. A config store
	// sees a handful of writes a minute; the lost read parallelism does not
	// matter. busy_timeout (in dsn) covers other processes on the same file.
	db.SetMaxOpenConns(1)

	s := &Store{db: db, path: abs}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
	}
	// The -wal and -shm files now exist. SQLite gives them the database
	// file's mode, but set it explicitly rather than rely on that (and on the
	// umask) for files that hold the same secrets.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Chmod(abs+suffix, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, dbErr(err))
		}
	}
	return s, nil
}

// dsn builds the driver's connection string for the absolute path abs.
//
// Durability: journal_mode=WAL with synchronous=NORMAL does not fsync on
// every commit, but a commit is complete once its frames are written to the
// WAL file, which happens before the write returns. Those writes sit in the
// operating system's page cache, which survives the process: every
// acknowledged write survives kill -9 or a panic. Only a power loss or kernel
// crash can lose the last few commits (never corrupt the database), which is
// an acceptable trade for a config store. synchronous=FULL would close that
// window at the cost of an fsync per write.
//
// _txlock=immediate makes every transaction take the write lock at BEGIN, so
// a transaction never has to upgrade from reader to writer: that upgrade is
// the one case where SQLite returns SQLITE_BUSY at once instead of waiting
// out busy_timeout, when another process holds the lock.
func dsn(abs string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	// A file: URI with the path escaped, so a '?', '#' or '%' in the path
	// is taken as part of the name rather than the start of parameters.
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	return "file:" + u.EscapedPath() + "?" + u.RawQuery
}

func (s *Store) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, s.db, sub,
		goose.WithTableName(migrationsTable),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	// p.Close would close s.db, which the Store keeps; the provider holds
	// nothing else.
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Pending writes are already durable (see Open);
// closing the last connection also checkpoints the WAL into the main file.
func (s *Store) Close() error {
	s.closeAuditInserts()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", dbErr(err))
	}
	return nil
}

// List returns every server, ordered by name.
func (s *Store) List(ctx context.Context) ([]switchboard.StoredServer, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT config, version, created_at, updated_at FROM servers ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", dbErr(err))
	}
	defer rows.Close()
	out := []switchboard.StoredServer{}
	for rows.Next() {
		srv, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", dbErr(err))
		}
		out = append(out, srv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", dbErr(err))
	}
	return out, nil
}

// Get returns the server named name, or an error wrapping
// [switchboard.ErrNotFound].
func (s *Store) Get(ctx context.Context, name string) (switchboard.StoredServer, error) {
	if name == "" {
		return switchboard.StoredServer{}, errors.New("sqlite: get: empty server name")
	}
	srv, err := scan(s.db.QueryRowContext(ctx,
		`SELECT config, version, created_at, updated_at FROM servers WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = switchboard.ErrNotFound
	}
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: get %q: %w", name, dbErr(err))
	}
	return srv, nil
}

// Create stores cfg at version 1, or fails with an error wrapping
// [switchboard.ErrExists]. It does not validate cfg.
func (s *Store) Create(ctx context.Context, cfg *switchboard.ServerConfig) (switchboard.StoredServer, error) {
	data, err := encode(cfg)
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: create: %w", dbErr(err))
	}
	now := now()
	// ON CONFLICT DO NOTHING lets the primary key decide atomically: of two
	// concurrent creates, one inserts and the other gets no row back.
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO servers (name, config, version, created_at, updated_at)
		 VALUES (?, ?, 1, ?, ?) ON CONFLICT (name) DO NOTHING`,
		cfg.Name, data, now.Format(timeFormat), now.Format(timeFormat))
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: create %q: %w", cfg.Name, mapErr(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: create %q: %w", cfg.Name, dbErr(err))
	} else if n == 0 {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: create %q: %w", cfg.Name, switchboard.ErrExists)
	}
	return switchboard.StoredServer{Config: *cfg.Clone(), Version: 1, CreatedAt: now, UpdatedAt: now}, nil
}

// Update replaces the config of the server named cfg.Name. If version is not
// zero it must equal the stored version, else the error wraps
// [switchboard.ErrConflict]; a missing server gives [switchboard.ErrNotFound].
func (s *Store) Update(ctx context.Context, cfg *switchboard.ServerConfig, version int64) (switchboard.StoredServer, error) {
	data, err := encode(cfg)
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: update: %w", dbErr(err))
	}
	now := now()
	var out switchboard.StoredServer
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var created string
		err := tx.QueryRowContext(ctx,
			`UPDATE servers SET config = ?, version = version + 1, updated_at = ?
			 WHERE name = ? AND (? = 0 OR version = ?)
			 RETURNING version, created_at`,
			data, now.Format(timeFormat), cfg.Name, version, version).Scan(&out.Version, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return missingOrConflict(ctx, tx, cfg.Name)
		}
		if err != nil {
			return err
		}
		out.CreatedAt, err = parseTime(created)
		return err
	})
	if err != nil {
		return switchboard.StoredServer{}, fmt.Errorf("sqlite: update %q: %w", cfg.Name, dbErr(err))
	}
	out.Config, out.UpdatedAt = *cfg.Clone(), now
	return out, nil
}

// Delete removes the server named name. If version is not zero it must equal
// the stored version, else the error wraps [switchboard.ErrConflict]; a
// missing server gives [switchboard.ErrNotFound].
func (s *Store) Delete(ctx context.Context, name string, version int64) error {
	if name == "" {
		return errors.New("sqlite: delete: empty server name")
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`DELETE FROM servers WHERE name = ? AND (? = 0 OR version = ?)`, name, version, version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return missingOrConflict(ctx, tx, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete %q: %w", name, dbErr(err))
	}
	return nil
}

// inTx runs fn in a transaction (BEGIN IMMEDIATE, see dsn) and commits it if
// fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}

// missingOrConflict explains why a guarded write matched no row: the server
// is gone, or its version moved on. It runs in the write's transaction,
// which holds the write lock, so the answer is about the same state the
// write saw.
func missingOrConflict(ctx context.Context, tx *sql.Tx, name string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM servers WHERE name = ?`, name).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return switchboard.ErrNotFound
	case err != nil:
		return err
	default:
		return switchboard.ErrConflict
	}
}

// mapErr turns a primary-key violation into ErrExists; the sentinels and
// other errors pass through. Create avoids the violation with ON CONFLICT,
// so this is a safety net.
func mapErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
		return fmt.Errorf("%w (%v)", switchboard.ErrExists, err)
	}
	return dbErr(err)
}

// dbProblems say, by SQLite's primary result code, what is wrong with the
// database itself, in words a person can act on.
var dbProblems = map[int]string{
	sqlite3.SQLITE_FULL:     "the database's disk is full: free some space on it",
	sqlite3.SQLITE_READONLY: "the database is read-only: check the permissions of its file and directory",
	sqlite3.SQLITE_IOERR:    "the database's disk failed to read or write",
	sqlite3.SQLITE_CORRUPT:  "the database file is damaged: restore it from a backup",
	sqlite3.SQLITE_NOTADB:   "the database file is not an SQLite database",
	sqlite3.SQLITE_CANTOPEN: "the database file cannot be opened",
	sqlite3.SQLITE_PERM:     "the database's file may not be written",
	sqlite3.SQLITE_BUSY:     "the database is locked by another program",
	sqlite3.SQLITE_LOCKED:   "the database is locked by another program",
}

// dbErr returns err as a *switchboard.DatabaseError if it is a failure of
// the database itself (dbProblems), else err.
func dbErr(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if problem, ok := dbProblems[se.Code()&0xff]; ok {
		return &switchboard.DatabaseError{Problem: problem, Err: err}
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

type scanner interface{ Scan(dest ...any) error }

func scan(row scanner) (switchboard.StoredServer, error) {
	var (
		srv              switchboard.StoredServer
		data             []byte
		created, updated string
	)
	if err := row.Scan(&data, &srv.Version, &created, &updated); err != nil {
		return srv, err
	}
	if err := json.Unmarshal(data, &srv.Config); err != nil {
		return srv, fmt.Errorf("decode stored config: %w", err)
	}
	var err error
	if srv.CreatedAt, err = parseTime(created); err != nil {
		return srv, err
	}
	if srv.UpdatedAt, err = parseTime(updated); err != nil {
		return srv, err
	}
	return srv, nil
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("decode stored timestamp: %w", err)
	}
	return t.UTC(), nil
}

// now is the current time at the precision stored, so a returned
// StoredServer equals what a later Get reads.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
