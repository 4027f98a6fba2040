package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-mcp/switchboard/api"
)

// StartAuth starts authorizing the server named name with OAuth: open the
// returned AuthorizationURL in a browser; the authorization server sends
// the browser back to the daemon (RedirectURL), which then reconnects the
// server. Poll AuthStatus, or wait for the server, to know it is done.
func (c *Client) StartAuth(ctx context.Context, name string) (api.AuthStart, error) {
	var out api.AuthStart
	err := c.do(ctx, http.MethodPost, "/api/v1/servers/"+pathName(name)+"/oauth/start", nil, &out)
	return out, err
}

// AuthStatus reports what the daemon holds for the server's OAuth (never
// a token).
func (c *Client) AuthStatus(ctx context.Context, name string) (api.AuthStatus, error) {
	var out api.AuthStatus
	err := c.do(ctx, http.MethodGet, "/api/v1/servers/"+pathName(name)+"/oauth", nil, &out)
	return out, err
}

// ForgetAuth deletes the server's stored OAuth tokens and client; the
// server then needs authorizing again.
func (c *Client) ForgetAuth(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/servers/"+pathName(name)+"/oauth", nil, nil)
}

// authPoll is how often WaitAuthorized asks whether the person has approved.
const authPoll = time.Second

// WaitAuthorized polls the daemon until the authorization of the server
// name started by StartAuth just before ends: tokens stored, or the flow
// failed (its error), or until passed with nobody approving.
func (c *Client) WaitAuthorized(ctx context.Context, name string, until time.Time) (api.AuthStatus, error) {
	started := time.Now()
	tick := time.NewTicker(authPoll)
	defer tick.Stop()
	for {
		st, err := c.AuthStatus(ctx, name)
		if err != nil {
			return st, err
		}
		if !st.Pending && st.LastAt != nil && st.LastAt.After(started.Add(-time.Second)) {
			if st.LastError != "" {
				return st, errors.New(st.LastError)
			}
			return st, nil
		}
		if time.Now().After(until) {
			return st, fmt.Errorf("nobody approved in time; run switchboard server auth %s again", name)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-tick.C:
		}
	}
}
