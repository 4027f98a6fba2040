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
