package client

import (
	"context"
	"net/http"

	"github.com/switchboard-mcp/switchboard/api"
)

// ServerStats returns the last hour of one server's tool calls, by the
// minute.
func (c *Client) ServerStats(ctx context.Context, name string) (api.Stats, error) {
	var st api.Stats
	err := c.do(ctx, http.MethodGet, "/api/v1/servers/"+pathName(name)+"/stats", nil, &st)
	return st, err
}

// Stats returns the last hour of every tool call of the daemon, by the
// minute, with each server's totals.
func (c *Client) Stats(ctx context.Context) (api.Stats, error) {
	var st api.Stats
	err := c.do(ctx, http.MethodGet, "/api/v1/stats", nil, &st)
	return st, err
}
