package switchboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Scope is what an API token may reach: ScopeAdmin, ScopeMCP, or
// "toolset:NAME" ([ToolsetScope]).
type Scope string

const (
	// ScopeAdmin reaches everything: the API and every MCP endpoint.
	ScopeAdmin Scope = "admin"
	// ScopeMCP reaches /mcp and /mcp/{name}: every server's tools.
	ScopeMCP Scope = "mcp"
	// scopeToolsetPrefix starts a scope that reaches one toolset's
	// endpoint, /toolsets/{name}/mcp.
	scopeToolsetPrefix = "toolset:"
)

// ToolsetScope is the scope that reaches the toolset name only.
func ToolsetScope(name string) Scope { return Scope(scopeToolsetPrefix + name) }

// Toolset returns the toolset a "toolset:NAME" scope reaches.
func (s Scope) Toolset() (string, bool) { return strings.CutPrefix(string(s), scopeToolsetPrefix) }

// validate checks that s is a scope this version knows.
func (s Scope) validate() error {
	if s == ScopeAdmin || s == ScopeMCP {
		return nil
	}
	if name, ok := s.Toolset(); ok && nameRE.MatchString(name) {
		return nil
	}
	return fmt.Errorf("%q is not a scope: use %q, %q or \"toolset:NAME\"", s, ScopeAdmin, ScopeMCP)
}

// Endpoint is what a request reaches, for [Principal.Allows]: the API, the
// MCP endpoints of the servers (/mcp, /mcp/{name}), or one toolset's.
type Endpoint struct {
	// Toolset names the toolset of /toolsets/{name}/mcp; empty otherwise.
	Toolset string
	// MCP is true for /mcp and /mcp/{name}.
	MCP bool
}

// Principal is who makes a request: the name its metrics and logs carry,
// and what it may reach.
type Principal struct {
	// Name is the token's name, or PrincipalAdmin, PrincipalLocal or
	// PrincipalAnonymous. Never a secret.
	Name   string
	Scopes []Scope
	// Revoked, for an API token, ends when the token is revoked: what the
	// principal opened (a request, an SSE stream, an MCP session) ends
	// with it. Nil for a credential that cannot be revoked.
	Revoked context.Context
}

// Names of the principals that are not API tokens.
const (
	// PrincipalAdmin: the admin credential (serve --token, or the web
	// page's login).
	PrincipalAdmin = "admin"
	// PrincipalAnonymous: no credential, on a daemon that asks for none.
	PrincipalAnonymous = "anonymous"
	// PrincipalLocal: the local user, over stdio.
	PrincipalLocal = "local"
)

// Allows is the one decision of which endpoints a principal reaches:
// admin reaches everything, mcp the servers' MCP endpoints, toolset:NAME
// that toolset's endpoint. (What a toolset shows of its servers is
// [Toolset.Allows]'s decision.)
func (p Principal) Allows(e Endpoint) bool {
	for _, s := range p.Scopes {
		switch {
		case s == ScopeAdmin:
			return true
		case s == ScopeMCP && e.MCP:
			return true
		}
		if name, ok := s.Toolset(); ok && e.Toolset != "" && name == e.Toolset {
			return true
		}
	}
	return false
}

// Token is an API token as listed: never its secret, which is shown once,
// when it is created, and stored only as a hash.
type Token struct {
	Name      string    `json:"name"`
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when the token last authenticated a request, to within
	// a minute; nil if never.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// StoredToken is a token with the hash of its secret.
type StoredToken struct {
	Token
	Hash [sha256.Size]byte
}

// TokenPrefix starts every token secret, so that one is recognisable (in a
// config file, a log, a secret scanner's rules).
const TokenPrefix = "sbt_"

// NewTokenSecret returns a new random secret (32 bytes, 256 bits) and its
// hash, the only thing stored. A fast hash is right for a random secret of
// this size: there is nothing to guess.
func NewTokenSecret() (secret string, hash [sha256.Size]byte) {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashToken(secret)
}

// HashToken is the stored form of a token secret.
func HashToken(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// Limits of a token.
const maxScopes = 64

// ValidateToken checks a new token's name and scopes and returns a
// *ValidationError naming each invalid field, or nil.
func ValidateToken(name string, scopes []Scope) error {
	var fs []*FieldError
	switch {
	case name == "":
		fs = append(fs, &FieldError{Field: "name", Message: "is required"})
	case !nameRE.MatchString(name):
		fs = append(fs, &FieldError{Field: "name", Message: "must be 1-48 characters of a-z, 0-9 and '-', starting with a letter or digit"})
	case name == PrincipalAdmin || name == PrincipalAnonymous || name == PrincipalLocal:
		fs = append(fs, &FieldError{Field: "name", Message: fmt.Sprintf("%q names the principal that is not a token in metrics and logs; choose another", name)})
	}
	switch {
	case len(scopes) == 0:
		fs = append(fs, &FieldError{Field: "scopes", Message: `name at least one: "admin", "mcp" or "toolset:NAME"`})
	case len(scopes) > maxScopes:
		fs = append(fs, &FieldError{Field: "scopes", Message: fmt.Sprintf("at most %d", maxScopes)})
	}
	for i, s := range scopes {
		if err := s.validate(); err != nil {
			fs = append(fs, &FieldError{Field: fmt.Sprintf("scopes[%d]", i), Message: err.Error()})
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return &ValidationError{Fields: fs}
}

// TokenStore keeps API tokens. The sqlite and postgres stores implement
// it. Tokens are not edited: a token is created, used and revoked.
type TokenStore interface {
	// ListTokens returns every token, ordered by name.
	ListTokens(ctx context.Context) ([]StoredToken, error)
	// CreateToken stores a token, or fails with ErrTokenExists.
	CreateToken(ctx context.Context, t *StoredToken) error
	// DeleteToken revokes a token, or fails with ErrTokenNotFound.
	DeleteToken(ctx context.Context, name string) error
	// TouchToken records that the token was used at when (a token revoked
	// meanwhile is no error).
	TouchToken(ctx context.Context, name string, when time.Time) error
}

// ChangeToken: the token Change.Name was created or revoked.
const ChangeToken ChangeKind = "token"

// Errors of a TokenStore, matched with errors.Is.
var (
	ErrTokenNotFound = NewError(CodeNotFound, "token not found")
	ErrTokenExists   = NewError(CodeExists, "a token with that name already exists")
)

type principalKey struct{}

// WithPrincipal returns ctx carrying p, who made the request.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
