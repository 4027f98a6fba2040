package switchboard

import (
	"context"
	"time"
)

// StoredServer is a server config as stored, with the version that guards
// concurrent edits.
type StoredServer struct {
	Config    ServerConfig
	Version   int64 // 1 on create, +1 on every update
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Store keeps server configs. Implementations (sqlite, postgres) are safe
// for concurrent use, including by several processes sharing one database:
// an update or delete that names a version succeeds only if the stored
// version still matches, so concurrent edits never silently overwrite each
// other.
type Store interface {
	// List returns every server, ordered by name.
	List(ctx context.Context) ([]StoredServer, error)
	// Get returns one server, or ErrNotFound.
	Get(ctx context.Context, name string) (StoredServer, error)
	// Create stores a new server at version 1, or fails with ErrExists.
	Create(ctx context.Context, cfg *ServerConfig) (StoredServer, error)
	// Update replaces a server's config. If version is not zero it must
	// equal the stored version, else ErrConflict. ErrNotFound if absent.
	Update(ctx context.Context, cfg *ServerConfig, version int64) (StoredServer, error)
	// Delete removes a server. If version is not zero it must equal the
	// stored version, else ErrConflict. ErrNotFound if absent.
	Delete(ctx context.Context, name string, version int64) error
	// Close releases the store.
	Close() error
}

// ChangeKind names what a [Change] is about. Servers are the only kind
// today; toolsets and tokens, when they are stored, join as kinds of their
// own, with the same name-and-version payload.
type ChangeKind string

const (
	// ChangeServer: the server Change.Name was created, updated (Version is
	// its new version) or deleted (Version is 0).
	ChangeServer ChangeKind = "server"
	// ChangeOAuth: the OAuth grant of the server Change.Name was written
	// (authorized, refreshed, forgotten: Version is 0 for a deletion, 1
	// otherwise). A replica reconnects the server if it waits for one.
	ChangeOAuth ChangeKind = "oauth"
	// ChangeResync: changes may have been missed (the feed connected or
	// reconnected, or fell behind), so everything should be compared with
	// the store. Name and Version are empty.
	ChangeResync ChangeKind = "resync"
)

// Change is one committed write, as a [ChangeFeed] reports it. It names
// what changed, not the new value: a receiver reads the store for that.
type Change struct {
	Kind    ChangeKind
	Name    string
	Version int64 // the version after the write; 0 for a deletion
}

// ChangeFeed is implemented by a Store that can tell the processes sharing
// it about each other's writes (postgres: LISTEN/NOTIFY). It is optional:
// a replica over a store without one relies on its periodic resync.
type ChangeFeed interface {
	// Watch calls fn with every change committed by any process, in commit
	// order, until ctx ends; then it returns ctx's error. It reconnects on
	// its own when the connection is lost, and after every (re)connection
	// it calls fn with a ChangeResync, since notifications sent meanwhile
	// are lost. fn is called from one goroutine at a time and should not
	// block.
	Watch(ctx context.Context, fn func(Change)) error
}

// DatabaseError is a failure of the database itself, not of the request:
// its disk is full, it is read-only, locked by another program, or
// damaged. Its message says so in a person's words, without the driver's
// text ("sqlite: ...: database or disk is full (13)"); its code stays
// CodeInternal (the request was fine; the daemon could not keep it), and
// Err is the driver's error.
type DatabaseError struct {
	Problem string // "the database's disk is full", ...
	Err     error
}

func (e *DatabaseError) Error() string { return e.Problem }
func (e *DatabaseError) Unwrap() error { return e.Err }
