package web

// This file is the page's login: one-time codes, and the sessions they
// are exchanged for. Everything is in memory: a restart of serve logs
// every browser out, which is the safe direction.
//
//	switchboard web ──POST /api/v1/login-codes (bearer token)──▶ code
//	browser ──GET /ui/login?code=C──▶ code spent ──▶ 303 /#csrf=T
//	                                  Set-Cookie: switchboard_session=S (HttpOnly, SameSite=Strict)
//	page ──/api/v1/... with cookie S and header X-Switchboard-CSRF: T──▶ served
//
// A request needs both: the cookie, which scripts cannot read and other
// sites' requests do not carry, and the header, which only this page's
// script knows (it arrived in the URL's fragment, which is never sent
// anywhere, and is kept in this origin's localStorage). A cookie alone,
// as another service on the same host but another port would receive it
// (cookies ignore ports), opens nothing.

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultCodeTTL    = 2 * time.Minute
	DefaultSessionTTL = 12 * time.Hour
)

// Bounds on what a flood of codes or logins can make the daemon keep; past
// them the oldest is forgotten.
const (
	maxCodes    = 32
	maxSessions = 64
)

// digest is what is kept of a code, a session id or a CSRF token: its
// SHA-256, so that a heap dump holds nothing a browser could present, and
// comparisons are of fixed length.
type digest [32]byte

func digestOf(s string) digest { return sha256.Sum256([]byte(s)) }

type session struct {
	csrf    digest
	expires time.Time
}

// sessions holds the outstanding login codes and the live sessions. It is
// safe for concurrent use.
type sessions struct {
	codeTTL, sessionTTL time.Duration
	now                 func() time.Time

	mu    sync.Mutex
	codes map[digest]time.Time // code -> expiry
	live  map[digest]session   // session id -> session
}

func newSessions(codeTTL, sessionTTL time.Duration) *sessions {
	return &sessions{codeTTL: codeTTL, sessionTTL: sessionTTL, now: time.Now,
		codes: map[digest]time.Time{}, live: map[digest]session{}}
}

// issueCode returns a new one-time login code and when it expires.
func (s *sessions) issueCode() (string, time.Time) {
	code := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.prune(now)
	if len(s.codes) >= maxCodes {
		evictOldest(s.codes, func(t time.Time) time.Time { return t })
	}
	exp := now.Add(s.codeTTL)
	s.codes[digestOf(code)] = exp
	return code, exp
}

// redeem spends code, once, for a new session: its id (the cookie) and
// CSRF token (the header). ok is false for a code that is unknown,
// expired or spent.
func (s *sessions) redeem(code string) (id, csrf string, expires time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	d := digestOf(code)
	exp, found := s.codes[d]
	delete(s.codes, d)
	if !found || !now.Before(exp) {
		return "", "", time.Time{}, false
	}
	s.prune(now)
	if len(s.live) >= maxSessions {
		evictOldest(s.live, func(v session) time.Time { return v.expires })
	}
	id, csrf = randomToken(), randomToken()
	expires = now.Add(s.sessionTTL)
	s.live[digestOf(id)] = session{csrf: digestOf(csrf), expires: expires}
	return id, csrf, expires, true
}

// check reports whether id names a live session whose CSRF token is csrf.
func (s *sessions) check(id, csrf string) bool {
	if id == "" || csrf == "" {
		return false
	}
	want := digestOf(csrf)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.live[digestOf(id)]
	if !ok {
		return false
	}
	if !s.now().Before(v.expires) {
		delete(s.live, digestOf(id))
		return false
	}
	return subtle.ConstantTimeCompare(v.csrf[:], want[:]) == 1
}

// end forgets the session id, if it is live.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, digestOf(id))
}

// prune drops expired codes and sessions. The caller holds mu.
func (s *sessions) prune(now time.Time) {
	for k, exp := range s.codes {
		if !now.Before(exp) {
			delete(s.codes, k)
		}
	}
	for k, v := range s.live {
		if !now.Before(v.expires) {
			delete(s.live, k)
		}
	}
}

// evictOldest deletes the entry of m that expires first.
func evictOldest[V any](m map[digest]V, expiry func(V) time.Time) {
	var (
		oldest digest
		at     time.Time
		first  = true
	)
	for k, v := range m {
		if t := expiry(v); first || t.Before(at) {
			oldest, at, first = k, t, false
		}
	}
	delete(m, oldest)
}

// randomToken returns 32 random bytes in hex.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return hex.EncodeToString(b)
}
