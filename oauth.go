package switchboard

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// OAuth grants of a remote server's config.
const (
	// GrantAuthorizationCode: a person authorizes Switchboard once in a
	// browser (switchboard server auth NAME); Switchboard then refreshes
	// the tokens on its own. The default.
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials: machine to machine. Switchboard gets its
	// tokens with the configured client id and secret, no person involved.
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is the "oauth" block of a remote server's config: the server
// requires OAuth 2.1 (the MCP authorization spec) and Switchboard is its
// client. Every field may be left out: the authorization server's metadata
// is discovered from the server's 401, and the client is registered by
// Client ID Metadata Document or dynamic client registration.
type OAuthConfig struct {
	// Grant is GrantAuthorizationCode (empty) or GrantClientCredentials.
	Grant string `json:"grant,omitempty"`
	// ClientID and ClientSecret: a client registered by hand with the
	// authorization server. Required for client_credentials. The secret
	// is masked on reads like every other secret.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// Scopes to request. Empty: those the server's 401 or its metadata
	// name. A 403 insufficient_scope adds the scopes it asks for.
	Scopes []string `json:"scopes,omitempty"`
	// ClientMetadataURL is the HTTPS URL of a Client ID Metadata Document
	// describing Switchboard as a client; used where the authorization
	// server supports such documents, before any other registration.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
}

// EffectiveGrant returns the grant, with the default filled in.
func (o *OAuthConfig) EffectiveGrant() string {
	if o.Grant == "" {
		return GrantAuthorizationCode
	}
	return o.Grant
}

// validate reports the bad fields of o through bad.
func (o *OAuthConfig) validate(remote bool, bad func(field, format string, args ...any)) {
	if !remote {
		bad("oauth", "is only valid for remote transports")
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			bad("oauth.client_id", "client_id and client_secret are required for grant client_credentials")
		}
	default:
		bad("oauth.grant", "must be %q (the default) or %q, not %q", GrantAuthorizationCode, GrantClientCredentials, o.Grant)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		bad("oauth.client_id", "is required with a client_secret")
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			bad("oauth.scopes", "%q is not a scope (no spaces, quotes or backslashes)", s)
		}
	}
	if u := o.ClientMetadataURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || p.Path == "" || p.Path == "/" {
			bad("oauth.client_metadata_url", "must be an https:// URL with a path")
		}
	}
	for _, v := range []string{o.Grant, o.ClientID, o.ClientSecret, o.ClientMetadataURL} {
		if strings.ContainsRune(v, 0) {
			bad("oauth", "must not contain a NUL character")
			return
		}
	}
}

// Clone returns a deep copy of o (nil for nil).
func (o *OAuthConfig) Clone() *OAuthConfig {
	if o == nil {
		return nil
	}
	c := *o
	c.Scopes = slices.Clone(o.Scopes)
	return &c
}

// OAuthGrant is what an authorization left behind for one server: the
// client Switchboard was registered as, where to refresh, and the tokens.
// It is stored sealed ([OAuthKey]); nothing of it leaves Switchboard.
type OAuthGrant struct {
	// Resource is the server URL the grant was made for. Its tokens are
	// sent to that origin only: a server whose URL moved elsewhere must be
	// authorized again.
	Resource     string    `json:"resource"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"` // oauth2.AuthStyle
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// StepUp lists scopes a 403 insufficient_scope asked for that the
	// grant lacks: the next authorization requests them too.
	StepUp []string `json:"step_up,omitempty"`
	// AuthorizedAt is when a person's authorization made the grant
	// (zero for client credentials); a refresh keeps it. A session that
	// has waited in phase auth since before it reconnects (registry/oauth.go).
	AuthorizedAt time.Time `json:"authorized_at,omitzero"`
	// Registered is the client Switchboard registered itself (dynamic
	// client registration), reused by every later authorization at the
	// same authorization server and redirect URI rather than registering
	// one per authorization. Nil if none; forgotten when the authorization
	// server no longer knows it (invalid_client).
	Registered *OAuthClient `json:"registered,omitempty"`
}

// OAuthClient is a client registered with an authorization server.
type OAuthClient struct {
	Issuer       string `json:"issuer"`
	RedirectURI  string `json:"redirect_uri"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthStyle    int    `json:"auth_style,omitempty"` // oauth2.AuthStyle
}

// OAuthStore keeps one sealed OAuth grant per server, next to the server
// configs, so that replicas sharing a database share the tokens (a refresh
// by one is seen by all), and the authorizations waiting for their
// callback, so that the callback may reach any replica. The store never
// sees a token or a PKCE verifier in the clear. It is separate from
// [Store] so that stores without it keep working; the sqlite and postgres
// stores implement both. A store with a [ChangeFeed] announces every write
// of a grant as a [ChangeOAuth].
//
// A grant has a version, 1 when created and one more on every write, so
// that a write based on what a process read fails rather than overwrites
// what another wrote since ([OAuthStore.SwapOAuthGrant]); and a refresh of
// it may be claimed, so that of the processes that find its access token
// expiring only one asks the authorization server, and the others wait
// for its tokens ([OAuthStore.ClaimOAuthRefresh]): with refresh token
// rotation, the others' requests would be refused (invalid_grant), and
// some authorization servers then revoke the whole grant.
type OAuthStore interface {
	// LoadOAuthGrant returns the sealed grant of server, or ErrNotFound.
	LoadOAuthGrant(ctx context.Context, server string) ([]byte, error)
	// LoadOAuthGrantVersion is LoadOAuthGrant with the grant's version.
	LoadOAuthGrantVersion(ctx context.Context, server string) (sealed []byte, version int64, err error)
	// SaveOAuthGrant stores (creates or replaces) the sealed grant,
	// whatever its version.
	SaveOAuthGrant(ctx context.Context, server string, sealed []byte) error
	// SwapOAuthGrant stores the sealed grant if its stored version is
	// still version (0: no grant is stored), and returns the new version;
	// ErrConflict if another write came first (or the grant was deleted).
	SwapOAuthGrant(ctx context.Context, server string, version int64, sealed []byte) (int64, error)
	// DeleteOAuthGrant removes the grant; no grant is not an error.
	DeleteOAuthGrant(ctx context.Context, server string) error

	// ClaimOAuthRefresh claims the refresh of server's grant for holder,
	// for ttl by the store's clock, and reports whether it got it: false
	// while another holder's claim lasts. A claim ends when its holder
	// releases it or its ttl passes (a holder that died).
	ClaimOAuthRefresh(ctx context.Context, server, holder string, ttl time.Duration) (bool, error)
	// ReleaseOAuthRefresh ends holder's claim of server's refresh, if it
	// still holds it.
	ReleaseOAuthRefresh(ctx context.Context, server, holder string) error

	// SaveOAuthPending stores an authorization of server waiting for its
	// callback, under id (a hash of its state parameter), until expires;
	// it drops those that expired meanwhile.
	SaveOAuthPending(ctx context.Context, id, server string, sealed []byte, expires time.Time) error
	// TakeOAuthPending removes and returns the authorization stored under
	// id, in one statement, so that it is taken once: ErrNotFound if there
	// is none, it was taken already, or it expired.
	TakeOAuthPending(ctx context.Context, id string) (server string, sealed []byte, err error)
	// OAuthPending reports whether an authorization of server that has
	// not expired waits for its callback.
	OAuthPending(ctx context.Context, server string) (bool, error)
}

// OAuthKey seals OAuth grants at rest with AES-256-GCM. The server's name
// is the additional data, so a grant copied to another server's row does
// not open. The key's file (created, checked, read) is package
// internal/oauthkey's.
type OAuthKey struct {
	aead cipher.AEAD
	raw  []byte // for Derive
}

// OAuthKeySize is the length of a key: AES-256.
const OAuthKeySize = 32

// NewOAuthKey returns the key for OAuthKeySize raw bytes.
func NewOAuthKey(key []byte) (*OAuthKey, error) {
	if len(key) != OAuthKeySize {
		return nil, fmt.Errorf("oauth key: %d bytes, want %d", len(key), OAuthKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &OAuthKey{aead: aead, raw: bytes.Clone(key)}, nil
}

// Derive returns a key of 32 bytes for purpose, made from this one
// (HMAC-SHA256 of purpose under it): every daemon given the same key file,
// every replica, derives the same, and it tells nothing of this key nor
// of a key derived for another purpose.
func (k *OAuthKey) Derive(purpose string) []byte {
	h := hmac.New(sha256.New, k.raw)
	h.Write([]byte("switchboard key for " + purpose))
	return h.Sum(nil)
}

// Seal encrypts plaintext for server.
func (k *OAuthKey) Seal(server string, plaintext []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	rand.Read(nonce)
	return k.aead.Seal(nonce, nonce, plaintext, []byte(server))
}

// ErrOAuthSeal: a stored grant does not open with this key (the key file
// was replaced, or the row was copied from another server).
var ErrOAuthSeal = errors.New("the stored OAuth grant does not open with this key file (was the key file replaced?); authorize the server again")

// Open decrypts what Seal sealed for server.
func (k *OAuthKey) Open(server string, sealed []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOAuthSeal
	}
	out, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(server))
	if err != nil {
		return nil, ErrOAuthSeal
	}
	return out, nil
}
