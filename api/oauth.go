package api

import "time"

// The OAuth routes (issue #17):
//
//	POST   /api/v1/servers/{name}/oauth/start    -> AuthStart: open its URL in a browser
//	GET    /api/v1/servers/{name}/oauth          -> AuthStatus
//	DELETE /api/v1/servers/{name}/oauth          -> 204: the stored tokens are forgotten
//	GET    /api/v1/servers/{name}/oauth/callback the authorization server's redirect (no credential: the state is one)

// AuthStart is the answer to starting an authorization: the URL a person
// opens to approve, and the callback the authorization server will send
// the browser to (it must be reachable from that browser).
type AuthStart struct {
	AuthorizationURL string    `json:"authorization_url"`
	RedirectURL      string    `json:"redirect_url"`
	ExpiresAt        time.Time `json:"expires_at"` // the approval must happen before
}

// AuthStatus is what Switchboard holds for a server's OAuth. No token is
// ever shown.
type AuthStatus struct {
	Server string `json:"server"`
	Grant  string `json:"grant"` // authorization_code or client_credentials
	// Authorized: tokens are stored (they may still be refused later).
	Authorized bool `json:"authorized"`
	// Pending: an authorization waits for its callback.
	Pending bool `json:"pending"`
	// ExpiresAt: when the access token expires (it is refreshed before).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Scopes    []string   `json:"scopes,omitempty"`
	// StepUp: scopes the server asked for (403 insufficient_scope) that
	// the next authorization will request.
	StepUp []string `json:"step_up,omitempty"`
	// LastAt: when the last authorization ended: a success on any
	// replica, or a failure in this process; LastError says how it
	// failed, if it did.
	LastError string     `json:"last_error,omitempty"`
	LastAt    *time.Time `json:"last_at,omitempty"`
}
