package registry

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// touchInterval is how often at most a token's last-used time is written:
// the listing says when it was last used to within this much, and a busy
// client costs one write a minute, not one per request.
const touchInterval = time.Minute

// Tokens is the set of API tokens, kept in memory by the hash of their
// secret so that checking a request costs one map lookup and no store
// query, and in step with the other replicas through RunSync (it is a
// Follower): a token revoked on any replica stops working on this one as
// soon as the change feed reports it. It is safe for concurrent use; Close
// it when done.
type Tokens struct {
	store sb.TokenStore
	log   *slog.Logger
	now   func() time.Time

	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]*liveToken
	byName map[string]*liveToken

	touchMu sync.Mutex     // orders touches.Go after Close's Wait
	touches sync.WaitGroup // last-used writes in flight
	closed  bool           // guarded by touchMu
}

// liveToken is a valid token: its listing, and a context that ends when it
// is revoked, which the requests it authenticates are bound to.
type liveToken struct {
	token    sb.Token
	hash     [sha256.Size]byte
	lastUsed atomic.Int64 // unix nanoseconds of the last write of last_used_at
	revoked  context.Context
	revoke   context.CancelFunc
}

// NewTokens returns the tokens of store, which must implement
// sb.TokenStore (the sqlite and postgres stores do). Call Load.
func NewTokens(store sb.Store, log *slog.Logger) (*Tokens, error) {
	ts, ok := store.(sb.TokenStore)
	if !ok {
		return nil, fmt.Errorf("registry: the store %T keeps no tokens", store)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Tokens{store: ts, log: log, now: time.Now,
		byHash: map[[sha256.Size]byte]*liveToken{}, byName: map[string]*liveToken{}}, nil
}

// Load reads every token from the store.
func (t *Tokens) Load(ctx context.Context) error {
	return t.Apply(ctx, sb.Change{Kind: sb.ChangeResync})
}

// Close waits for the last-used writes in flight; later uses write none.
func (t *Tokens) Close() {
	t.touchMu.Lock()
	t.closed = true
	t.touchMu.Unlock()
	t.touches.Wait()
}

// Authenticate returns the principal of a token secret (its Revoked ends
// when the token is revoked: bind what it opens to it), or false if secret
// is no valid token. It records the use, at most once a minute per token,
// without waiting for the store.
func (t *Tokens) Authenticate(secret string) (sb.Principal, bool) {
	if !strings.HasPrefix(secret, sb.TokenPrefix) {
		return sb.Principal{}, false
	}
	h := sb.HashToken(secret)
	t.mu.RLock()
	lt := t.byHash[h]
	t.mu.RUnlock()
	if lt == nil {
		return sb.Principal{}, false
	}
	t.touch(lt)
	return sb.Principal{Name: lt.token.Name, Scopes: lt.token.Scopes, Revoked: lt.revoked}, true
}

// touch writes lt's last-used time if the last write is touchInterval old.
func (t *Tokens) touch(lt *liveToken) {
	now := t.now()
	last := lt.lastUsed.Load()
	if now.UnixNano()-last < int64(touchInterval) || !lt.lastUsed.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	t.touchMu.Lock()
	defer t.touchMu.Unlock()
	if t.closed {
		return
	}
	t.touches.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.store.TouchToken(ctx, lt.token.Name, now); err != nil {
			t.log.Warn("recording a token's use failed", "token", lt.token.Name, "error", err)
		}
	})
}

// List returns every token as the store lists it (with its last-used
// time), ordered by name.
func (t *Tokens) List(ctx context.Context) ([]sb.Token, error) {
	all, err := t.store.ListTokens(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sb.Token, len(all))
	for i, st := range all {
		out[i] = st.Token
	}
	return out, nil
}

// Create makes a token with a new secret, stores its hash, and returns
// the secret: the only time anyone sees it.
func (t *Tokens) Create(ctx context.Context, name string, scopes []sb.Scope) (string, sb.Token, error) {
	if err := sb.ValidateToken(name, scopes); err != nil {
		return "", sb.Token{}, err
	}
	secret, hash := sb.NewTokenSecret()
	st := &sb.StoredToken{Token: sb.Token{Name: name, Scopes: slices.Clone(scopes)}, Hash: hash}
	if err := t.store.CreateToken(ctx, st); err != nil {
		return "", sb.Token{}, err
	}
	t.add(*st)
	return secret, st.Token, nil
}

// Revoke deletes a token: from now on it authenticates nothing, and every
// request it authenticated that is still open (a call, an SSE stream) has
// its context ended.
func (t *Tokens) Revoke(ctx context.Context, name string) error {
	err := t.store.DeleteToken(ctx, name)
	// Drop it here even if the store says it is gone already: another
	// replica revoked it, and its notice may not have arrived.
	t.drop(name)
	return err
}

// Apply implements Follower for sb.ChangeToken and sb.ChangeResync.
func (t *Tokens) Apply(ctx context.Context, c sb.Change) error {
	if c.Kind != sb.ChangeResync && c.Kind != sb.ChangeToken {
		return nil
	}
	// Tokens are few: a change of one reads them all, which also covers a
	// token deleted and created again under its name.
	all, err := t.store.ListTokens(ctx)
	if err != nil {
		return fmt.Errorf("loading tokens: %w", err)
	}
	stored := make(map[string]bool, len(all))
	for _, st := range all {
		stored[st.Name] = true
		t.mu.RLock()
		lt := t.byName[st.Name]
		t.mu.RUnlock()
		if lt != nil && lt.hash != st.Hash {
			t.drop(st.Name) // revoked and created again elsewhere
		}
		t.add(st)
	}
	t.mu.RLock()
	var gone []string
	for name := range t.byName {
		if !stored[name] {
			gone = append(gone, name)
		}
	}
	t.mu.RUnlock()
	for _, name := range gone {
		t.drop(name)
	}
	return nil
}

// add keeps st as a valid token, unless it is kept already.
func (t *Tokens) add(st sb.StoredToken) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byName[st.Name]; ok {
		return
	}
	lt := &liveToken{token: st.Token, hash: st.Hash}
	if st.LastUsedAt != nil {
		lt.lastUsed.Store(st.LastUsedAt.UnixNano())
	}
	lt.revoked, lt.revoke = context.WithCancel(context.Background())
	t.byName[st.Name] = lt
	t.byHash[st.Hash] = lt
}

// drop forgets a token and ends the requests it authenticated.
func (t *Tokens) drop(name string) {
	t.mu.Lock()
	lt := t.byName[name]
	if lt != nil {
		delete(t.byName, name)
		delete(t.byHash, lt.hash)
	}
	t.mu.Unlock()
	if lt != nil {
		lt.revoke()
		t.log.Info("token revoked", "token", name)
	}
}
