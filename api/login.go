package api

import "time"

// LoginCode is the answer (201) of POST /api/v1/login-codes, which only
// the bearer token may call: a code that logs a browser into the web page
// once. "switchboard web" asks for one and opens the link.
type LoginCode struct {
	// Code is random, accepted once, and expires at ExpiresAt.
	Code string `json:"code"`
	// Path is the login link relative to the daemon's address:
	// "/ui/login?code=...". Opening it exchanges the code for a session
	// cookie and lands on the page.
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}
