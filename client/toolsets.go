package client

import (
	"context"
	"net/http"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// Toolsets returns every toolset, ordered by name.
func (c *Client) Toolsets(ctx context.Context) ([]api.ToolsetView, error) {
	var body api.ToolsetList
	err := c.do(ctx, http.MethodGet, "/api/v1/toolsets", nil, &body)
	return body.Toolsets, err
}

// Toolset returns one toolset; an unknown name is an *Error with code
// sb.CodeNotFound.
func (c *Client) Toolset(ctx context.Context, name string) (api.ToolsetView, error) {
	var v api.ToolsetView
	err := c.do(ctx, http.MethodGet, "/api/v1/toolsets/"+pathName(name), nil, &v)
	return v, err
}

// CreateToolset stores a new toolset; its clients can use it at once. A
// toolset whose exposed names would collide is an *Error with code
// sb.CodeInvalidConfig naming the field.
func (c *Client) CreateToolset(ctx context.Context, ts *sb.Toolset) (api.ToolsetView, error) {
	var v api.ToolsetView
	err := c.do(ctx, http.MethodPost, "/api/v1/toolsets", ts, &v)
	return v, err
}

// UpdateToolset replaces the toolset name. version, if not zero, must be
// the version the caller read, else the update fails with sb.CodeConflict.
func (c *Client) UpdateToolset(ctx context.Context, name string, ts *sb.Toolset, version int64) (api.ToolsetView, error) {
	req, err := c.newRequest(ctx, http.MethodPut, "/api/v1/toolsets/"+pathName(name), ts)
	if err != nil {
		return api.ToolsetView{}, err
	}
	ifMatch(req, version)
	var v api.ToolsetView
	err = c.doRequest(req, &v)
	return v, err
}

// DeleteToolset deletes a toolset; its clients' next requests are answered
// 404. version, if not zero, must be the stored version.
func (c *Client) DeleteToolset(ctx context.Context, name string, version int64) error {
	req, err := c.newRequest(ctx, http.MethodDelete, "/api/v1/toolsets/"+pathName(name), nil)
	if err != nil {
		return err
	}
	ifMatch(req, version)
	return c.doRequest(req, nil)
}

// Tokens returns every API token (never a secret), ordered by name, with
// when each was last used.
func (c *Client) Tokens(ctx context.Context) ([]sb.Token, error) {
	var body api.TokenList
	err := c.do(ctx, http.MethodGet, "/api/v1/tokens", nil, &body)
	return body.Tokens, err
}

// CreateToken makes an API token with scopes and returns it with its
// secret, which is shown this once.
func (c *Client) CreateToken(ctx context.Context, name string, scopes []sb.Scope) (api.CreatedToken, error) {
	var t api.CreatedToken
	err := c.do(ctx, http.MethodPost, "/api/v1/tokens", api.TokenRequest{Name: name, Scopes: scopes}, &t)
	return t, err
}

// RevokeToken revokes an API token: it stops working at once, on every
// replica, open sessions included.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/tokens/"+pathName(name), nil, nil)
}
