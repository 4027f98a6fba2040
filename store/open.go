// Package store opens the [switchboard.Store] a DSN names: a SQLite file
// (package store/sqlite) or a PostgreSQL database (package store/postgres).
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/store/postgres"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// Forms names the DSNs Open accepts, for error and help texts.
const Forms = "sqlite:PATH (e.g. sqlite:./switchboard.db), a file path ending in .db, " +
	"or postgres://USER:PASSWORD@HOST:PORT/DATABASE (also postgresql://)"

type backend int

const (
	backendSQLite backend = iota + 1
	backendPostgres
)

// Open opens the store dsn names:
//
//   - sqlite:PATH, e.g. sqlite:./switchboard.db or sqlite:/var/lib/switchboard.db
//     (sqlite:///abs/path.db is taken as /abs/path.db);
//   - a bare file path ending in .db, which also means SQLite;
//   - postgres://... or postgresql://..., a PostgreSQL connection URL.
//
// Anything else is an error naming these forms. Open migrates the schema.
func Open(ctx context.Context, dsn string) (switchboard.Store, error) {
	kind, target, err := parse(dsn)
	if err != nil {
		return nil, err
	}
	switch kind {
	case backendSQLite:
		s, err := sqlite.Open(ctx, target)
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		s, err := postgres.Open(ctx, target)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// SQLiteFile returns the database file that a SQLite dsn names, or "" for
// any other dsn.
func SQLiteFile(dsn string) string {
	kind, target, err := parse(dsn)
	if err != nil || kind != backendSQLite {
		return ""
	}
	return target
}

// parse tells which backend dsn names, and what to pass it: the file path
// for SQLite, the whole URL for PostgreSQL.
func parse(dsn string) (backend, string, error) {
	dsn = strings.TrimSpace(dsn)
	lower := strings.ToLower(dsn)
	switch {
	case dsn == "":
		return 0, "", errors.New("store: empty DSN; use " + Forms)
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return backendPostgres, dsn, nil
	case strings.HasPrefix(lower, "sqlite:"):
		path := dsn[len("sqlite:"):]
		if rest, ok := strings.CutPrefix(path, "//"); ok {
			// URL style: only sqlite:///abs/path (an empty host) has an
			// obvious meaning; sqlite://x.db would silently be /x.db.
			if !strings.HasPrefix(rest, "/") {
				return 0, "", fmt.Errorf("store: DSN %q: write sqlite:PATH, e.g. sqlite:./switchboard.db or sqlite:/abs/path.db", dsn)
			}
			path = rest
		}
		if path == "" {
			return 0, "", fmt.Errorf("store: DSN %q has no file path; use e.g. sqlite:./switchboard.db", dsn)
		}
		return backendSQLite, path, nil
	case strings.HasSuffix(lower, ".db") && !strings.Contains(dsn, "://"):
		return backendSQLite, dsn, nil
	default:
		return 0, "", fmt.Errorf("store: unrecognized DSN %q; use %s", Redact(dsn), Forms)
	}
}

// kvPassword matches password=... and sslpassword=... in a key=value DSN,
// quoted or not.
var kvPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// userinfoPassword matches the password of scheme://user:password@ in a
// string that does not parse as a URL. It runs to the last '@', since a
// broken password may hold '@', spaces or '/': masking too much is better
// than showing part of it.
var userinfoPassword = regexp.MustCompile(`(://[^:/@\s]*:).*@`)

// Redact returns dsn with any password replaced by "xxxxx", for logs and
// error messages: the password of a URL's user info, password= and
// sslpassword= query parameters, and password=... in key=value form.
// Other DSNs are returned unchanged.
func Redact(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return kvPassword.ReplaceAllString(userinfoPassword.ReplaceAllString(dsn, "${1}xxxxx@"), "${1}xxxxx")
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
		}
		if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
			for _, k := range []string{"password", "sslpassword"} {
				if q.Has(k) {
					q.Set(k, "xxxxx")
				}
			}
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}
