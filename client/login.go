package client

import (
	"context"
	"net/http"

	"github.com/switchboard-mcp/switchboard/api"
)

// LoginCode asks the daemon for a one-time login code of its web page
// (POST /api/v1/login-codes, which needs the token itself). The link to
// open is the client's BaseURL followed by the code's Path.
func (c *Client) LoginCode(ctx context.Context) (api.LoginCode, error) {
	var lc api.LoginCode
	err := c.do(ctx, http.MethodPost, "/api/v1/login-codes", nil, &lc)
	return lc, err
}
