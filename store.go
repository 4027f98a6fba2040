package switchboard

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"time"
)

// Errors of a Store, matched with errors.Is.
var (
	ErrNotFound = errors.New("server not found")
	ErrExists   = errors.New("a server with that name already exists")
	// ErrConflict: the server changed since the version the writer read.
	ErrConflict = errors.New("the server was changed by someone else; reload it and try again")
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

// ServerView is a server as the API shows it: its config with secrets
// masked, its version, and its runtime info. The config's fields are
// flattened into the view's JSON object.
type ServerView struct {
	ServerConfig
	Version   int64       `json:"version"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Runtime   RuntimeInfo `json:"runtime"`
}

// SecretMask replaces every secret value (env and header values) on reads.
// A write that sends it back keeps the stored value.
const SecretMask = "***"

// Masked returns a copy of c with every env and header value replaced by
// SecretMask, and the credentials in its URL (a userinfo password,
// credential-like query parameters) too.
func (c *ServerConfig) Masked() *ServerConfig {
	m := c.Clone()
	m.URL = MaskURL(c.URL)
	for k := range m.Env {
		m.Env[k] = SecretMask
	}
	for k := range m.Headers {
		m.Headers[k] = SecretMask
	}
	return m
}

// Unmask returns a copy of c in which every value equal to SecretMask is
// replaced by the value stored under the same key in prev. A masked value
// with no stored counterpart is an error: the caller sent back a mask for a
// secret that does not exist.
func (c *ServerConfig) Unmask(prev *ServerConfig) (*ServerConfig, error) {
	out := c.Clone()
	restore := func(field string, dst, src map[string]string) error {
		for k, v := range dst {
			if v != SecretMask {
				continue
			}
			old, ok := src[k]
			if !ok {
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but no secret is stored under that name`}}}
			}
			dst[k] = old
		}
		return nil
	}
	var penv, phdr map[string]string
	if prev != nil {
		penv, phdr = prev.Env, prev.Headers
		// A URL sent back as it was shown keeps its stored credentials.
		if out.URL != prev.URL && out.URL == MaskURL(prev.URL) {
			out.URL = prev.URL
		}
	}
	if err := restore("env", out.Env, penv); err != nil {
		return nil, err
	}
	if err := restore("headers", out.Headers, phdr); err != nil {
		return nil, err
	}
	return out, nil
}

// credentialParam matches query parameter names that carry credentials.
var credentialParam = regexp.MustCompile(`(?i)(token|key|secret|password|passwd|auth|signature|sig|credential)`)

// MaskURL returns raw with the password of its userinfo and the values of
// credential-like query parameters replaced by SecretMask. A string that
// does not parse as a URL is returned as is.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return raw
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), SecretMask)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if credentialParam.MatchString(k) {
				for i := range q[k] {
					q[k][i] = SecretMask
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}
