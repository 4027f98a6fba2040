package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// Servers returns every configured server, ordered by name, secrets
// masked.
func (c *Client) Servers(ctx context.Context) ([]sb.ServerView, error) {
	var body api.ServerList
	err := c.do(ctx, http.MethodGet, "/api/v1/servers", nil, &body)
	return body.Servers, err
}

// Server returns one server; an unknown name is an *Error with code
// sb.CodeNotFound.
func (c *Client) Server(ctx context.Context, name string) (sb.ServerView, error) {
	var v sb.ServerView
	err := c.do(ctx, http.MethodGet, "/api/v1/servers/"+pathName(name), nil, &v)
	return v, err
}

// CreateServer stores a new server and, if enabled, starts it without
// waiting for it to connect.
func (c *Client) CreateServer(ctx context.Context, cfg *sb.ServerConfig) (sb.ServerView, error) {
	var v sb.ServerView
	err := c.do(ctx, http.MethodPost, "/api/v1/servers", cfg, &v)
	return v, err
}

// UpdateServer replaces the config of the server name. version, if not
// zero, must be the version the caller read, else the update fails with
// sb.CodeConflict. Env and header values sent as sb.SecretMask keep their
// stored values.
func (c *Client) UpdateServer(ctx context.Context, name string, cfg *sb.ServerConfig, version int64) (sb.ServerView, error) {
	req, err := c.newRequest(ctx, http.MethodPut, "/api/v1/servers/"+pathName(name), cfg)
	if err != nil {
		return sb.ServerView{}, err
	}
	ifMatch(req, version)
	var v sb.ServerView
	err = c.doRequest(req, &v)
	return v, err
}

// EditServer changes a server as edit says and stores the result: it reads
// the server, calls edit with its config as the API shows it (secrets
// masked as sb.SecretMask, which the update keeps as stored as long as
// the command, arguments or URL origin they go to are unchanged; see
// sb.ServerConfig.Unmask) and updates it based on the version read. If
// someone changed the server in between, the error has code
// sb.CodeConflict and nothing is changed: read it again. An error of edit
// is returned as is.
func (c *Client) EditServer(ctx context.Context, name string, edit func(cfg *sb.ServerConfig) error) (sb.ServerView, error) {
	v, err := c.Server(ctx, name)
	if err != nil {
		return sb.ServerView{}, err
	}
	cfg := v.ServerConfig.Clone()
	if err := edit(cfg); err != nil {
		return sb.ServerView{}, err
	}
	return c.UpdateServer(ctx, name, cfg, v.Version)
}

// DeleteServer stops a server and deletes its config. version, if not
// zero, must be the stored version.
func (c *Client) DeleteServer(ctx context.Context, name string, version int64) error {
	req, err := c.newRequest(ctx, http.MethodDelete, "/api/v1/servers/"+pathName(name), nil)
	if err != nil {
		return err
	}
	ifMatch(req, version)
	return c.doRequest(req, nil)
}

// ifMatch bases an edit on version, unless it is zero.
func ifMatch(req *http.Request, version int64) {
	if version != 0 {
		req.Header.Set("If-Match", strconv.Quote(strconv.FormatInt(version, 10)))
	}
}

// SetEnabled enables a server (starting it without waiting for it to
// connect) or disables it (stopping it), and returns its view.
func (c *Client) SetEnabled(ctx context.Context, name string, enabled bool) (sb.ServerView, error) {
	verb := "/disable"
	if enabled {
		verb = "/enable"
	}
	var v sb.ServerView
	err := c.do(ctx, http.MethodPost, "/api/v1/servers/"+pathName(name)+verb, nil, &v)
	return v, err
}

// RestartServer reconnects a server with a fresh retry budget, restarting
// the process of a stdio server. It returns once the restart has begun; a
// disabled server is an *Error with code sb.CodeDisabled.
func (c *Client) RestartServer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/servers/"+pathName(name)+"/restart", nil, nil)
}

// TestServer runs a throwaway session for a stored server, apart from its
// live session, and returns what it found. A server that fails to connect
// is a result (Runtime.Status is not connected), not an error.
func (c *Client) TestServer(ctx context.Context, name string) (api.TestResult, error) {
	var res api.TestResult
	err := c.do(ctx, http.MethodPost, "/api/v1/servers/"+pathName(name)+"/test", nil, &res)
	return res, err
}

// TestConfig is TestServer for a config that is not stored (a draft).
// Secrets sent as sb.SecretMask are taken from the stored server of the
// same name; a config without a name is tested as "draft".
func (c *Client) TestConfig(ctx context.Context, cfg *sb.ServerConfig) (api.TestResult, error) {
	var res api.TestResult
	err := c.do(ctx, http.MethodPost, "/api/v1/test", cfg, &res)
	return res, err
}

// Tools returns the tools of every connected server.
func (c *Client) Tools(ctx context.Context) ([]api.ToolView, error) {
	var body api.ToolList
	err := c.do(ctx, http.MethodGet, "/api/v1/tools", nil, &body)
	return body.Tools, err
}

// SearchTools returns at most limit tools of the connected servers that
// match query, best first (limit 0: the daemon's default).
func (c *Client) SearchTools(ctx context.Context, query string, limit int) ([]api.ToolHit, error) {
	v := url.Values{"search": {query}}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var body api.ToolHits
	err := c.do(ctx, http.MethodGet, "/api/v1/tools?"+v.Encode(), nil, &body)
	return body.Tools, err
}

// Status says which replica answered and how fresh its view of the
// database is.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := c.do(ctx, http.MethodGet, "/api/v1/status", nil, &st)
	return st, err
}

// ServerTools returns the tools of one server as last listed: none while
// it is disabled or not connected.
func (c *Client) ServerTools(ctx context.Context, name string) ([]api.ToolView, error) {
	var body api.ToolList
	err := c.do(ctx, http.MethodGet, "/api/v1/servers/"+pathName(name)+"/tools", nil, &body)
	return body.Tools, err
}

// Logs returns the stderr lines kept for a stdio server, oldest first.
func (c *Client) Logs(ctx context.Context, name string) ([]string, error) {
	var body api.LogLines
	err := c.do(ctx, http.MethodGet, "/api/v1/servers/"+pathName(name)+"/logs", nil, &body)
	return body.Lines, err
}
