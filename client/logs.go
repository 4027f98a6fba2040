package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/internal/sse"
)

// LogRecord is one record of a followed log: a line the server wrote to
// stderr, or, when Event is not nil, a change of the server's state (a
// reason of sb.ReasonStarting is a new connection attempt: for a stdio
// server, a new process).
type LogRecord struct {
	Line  api.LogLine
	Event *sb.Event
}

// LogStream is a followed log (FollowLogs). It is read by one goroutine.
type LogStream struct {
	ctx    context.Context
	body   io.ReadCloser
	events *sse.Reader
	c      *Client
	req    *http.Request
}

// FollowLogs streams a server's stderr lines (GET
// /api/v1/servers/{name}/logs?follow=true): the lines kept (the last tail
// of them if tail > 0), then each new line, stamped with when the daemon
// read it, and the server's state changes between them. The stream lasts
// until ctx ends, Close is called, or the server is deleted (then Next
// returns the deletion, then io.EOF).
func (c *Client) FollowLogs(ctx context.Context, name string, tail int) (*LogStream, error) {
	path := "/api/v1/servers/" + pathName(name) + "/logs?follow=true"
	if tail > 0 {
		path += "&tail=" + strconv.Itoa(tail)
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return &LogStream{ctx: ctx, body: resp.Body, events: sse.NewReader(resp.Body), c: c, req: req}, nil
}

// Next blocks until the next record and returns it. At the end of the
// stream it returns io.EOF or the context's error.
func (s *LogStream) Next() (LogRecord, error) {
	for {
		ev, err := s.events.Next()
		if err != nil {
			if s.ctx.Err() != nil {
				return LogRecord{}, s.c.reachError(s.req, err)
			}
			return LogRecord{}, err
		}
		var rec LogRecord
		switch ev.Name {
		case api.EventLog:
			err = json.Unmarshal(ev.Data, &rec.Line)
		case api.EventStatus:
			rec.Event = new(sb.Event)
			err = json.Unmarshal(ev.Data, rec.Event)
		default:
			continue
		}
		if err != nil {
			return LogRecord{}, fmt.Errorf("unreadable %s event: %s", ev.Name, truncate(string(ev.Data), 80))
		}
		return rec, nil
	}
}

// Close ends the stream.
func (s *LogStream) Close() error { return s.body.Close() }
