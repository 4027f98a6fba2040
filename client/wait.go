package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	sb "github.com/switchboard-mcp/switchboard"
)

// AttemptWatch waits for the outcome of a server's next connection
// attempt, from the daemon's status events. Start it (WatchAttempt) before
// the change that makes the attempt (create, update, enable, restart), so
// that no event of it is missed; then call Wait, once, and Close.
type AttemptWatch struct {
	c      *Client
	name   string
	events *EventStream
	cancel context.CancelFunc
}

// Outcome is what a watched attempt came to.
type Outcome struct {
	// View is the server as it is once the attempt ended.
	View sb.ServerView
	// Error is why the attempt failed; nil if it connected. The server
	// may still be retrying (View.Runtime.Status connecting).
	Error *sb.ErrorInfo
	// Attempted is false when there was no attempt to wait for: the
	// change left a connected or failed session as it was (a new call
	// timeout, say), and View and Error are its state.
	Attempted bool
}

// ErrStopped is returned by Wait when the server was stopped, disabled or
// deleted before its attempt ended.
var ErrStopped = errors.New("the server stopped before its connection attempt ended")

// WatchAttempt subscribes to the status events of the server name. The
// subscription lasts until Close or until ctx ends.
func (c *Client) WatchAttempt(ctx context.Context, name string) (*AttemptWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := c.Events(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &AttemptWatch{c: c, name: name, events: s, cancel: cancel}, nil
}

// Wait returns the outcome of the first attempt that starts after
// WatchAttempt: the first event of a connection or a failed attempt after
// an attempt began. after is the view the change answered with, if it did
// (nil after a restart, which answers with none): a view that is not
// connecting shows a change that started no attempt, and is the outcome as
// it is. ctx bounds the wait.
func (w *AttemptWatch) Wait(ctx context.Context, after *sb.ServerView) (Outcome, error) {
	if after != nil {
		switch after.Runtime.Status {
		case sb.StatusConnected:
			return Outcome{View: *after}, nil
		case sb.StatusError, sb.StatusDisabled:
			return Outcome{View: *after, Error: after.Runtime.Error}, nil
		}
	}
	// The events are read by another goroutine, so that ctx bounds the
	// wait even while no event comes.
	type result struct {
		ev  sb.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		started := false
		for {
			ev, err := w.events.Next()
			if err != nil {
				got <- result{err: err}
				return
			}
			if ev.Server != w.name {
				continue
			}
			switch ev.Reason {
			case sb.ReasonStarting:
				started = true
			case sb.ReasonConnected, sb.ReasonAttemptFailed:
				if started {
					got <- result{ev: ev}
					return
				}
			case sb.ReasonStopped:
				// Before the attempt began, this is the session a change
				// replaced; after, the server was stopped.
				if started {
					got <- result{ev: ev}
					return
				}
			case sb.ReasonDeleted:
				got <- result{ev: ev}
				return
			case sb.ReasonUpdated:
				if ev.Status == sb.StatusDisabled {
					got <- result{ev: ev}
					return
				}
			}
		}
	}()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		w.Close() // ends the reader
		return Outcome{}, fmt.Errorf("waiting for %s to connect: %w", w.name, context.Cause(ctx))
	}
	if r.err != nil {
		if errors.Is(r.err, io.EOF) {
			r.err = errors.New("the daemon ended the event stream")
		}
		return Outcome{}, fmt.Errorf("waiting for %s to connect: %w", w.name, r.err)
	}
	v, err := w.c.Server(ctx, w.name)
	switch {
	case r.ev.Reason == sb.ReasonDeleted:
		return Outcome{}, fmt.Errorf("%s: %w (deleted)", w.name, ErrStopped)
	case err != nil:
		return Outcome{}, err
	case r.ev.Reason == sb.ReasonConnected:
		return Outcome{View: v, Attempted: true}, nil
	case r.ev.Reason == sb.ReasonAttemptFailed:
		return Outcome{View: v, Error: r.ev.Error, Attempted: true}, nil
	}
	return Outcome{View: v}, fmt.Errorf("%s: %w (%s)", w.name, ErrStopped, v.Runtime.Status)
}

// Close ends the subscription.
func (w *AttemptWatch) Close() {
	w.cancel()
	w.events.Close()
}
