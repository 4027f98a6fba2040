package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/internal/sse"
)

// EventStream is a subscription to the daemon's status events. It is
// read by one goroutine.
type EventStream struct {
	ctx    context.Context
	body   io.ReadCloser
	events *sse.Reader
	c      *Client
	req    *http.Request
}

// Events subscribes to the daemon's status events (GET /api/v1/events).
// It returns once the daemon has accepted the subscription: every change
// from then on is delivered, unless the reader falls far behind (the
// daemon drops events for a subscriber that lags by 256; re-read the
// servers then). The stream lasts until ctx ends, Close is called, or the
// daemon shuts down.
func (c *Client) Events(ctx context.Context) (*EventStream, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return &EventStream{ctx: ctx, body: resp.Body, events: sse.NewReader(resp.Body), c: c, req: req}, nil
}

// Next blocks until the next event and returns it. At the end of the
// stream it returns io.EOF (the daemon ended it) or the context's error.
func (s *EventStream) Next() (sb.Event, error) {
	for {
		ev, err := s.events.Next()
		if err != nil {
			if s.ctx.Err() != nil {
				return sb.Event{}, s.c.reachError(s.req, err)
			}
			return sb.Event{}, err
		}
		if ev.Name != api.EventStatus {
			continue
		}
		var e sb.Event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return sb.Event{}, fmt.Errorf("unreadable status event: %s", truncate(string(ev.Data), 80))
		}
		return e, nil
	}
}

// Close ends the subscription.
func (s *EventStream) Close() error { return s.body.Close() }
