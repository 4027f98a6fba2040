package client

import (
	"context"
	"net/http"

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
