package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-mcp/switchboard"
)

// changesChannel is the channel the servers table's trigger notifies
// (migrations/00002_notify.sql).
const changesChannel = "switchboard_changes"

// Reconnection delays of Watch: the first retry is quick (a restarted
// PostgreSQL or a terminated backend is usually back at once), later ones
// back off to a cap that still finds the database within seconds of its
// return.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// watchBackoff is the wait before reconnection attempt n (0, 1, ...) after
// the connection was lost: watchRetryMin doubled n times, at most
// watchRetryMax.
func watchBackoff(n int) time.Duration {
	d := watchRetryMin
	for range min(n, 16) {
		d *= 2
		if d >= watchRetryMax {
			return watchRetryMax
		}
	}
	return d
}

var _ switchboard.ChangeFeed = (*Store)(nil)

// Watch implements [switchboard.ChangeFeed] with LISTEN on a connection of
// its own (outside the pool: a LISTEN belongs to one session, and a pooled
// connection would be handed to other queries). A lost connection is
// redialled with backoff (100 ms doubling to 5 s); each successful LISTEN is
// followed by a ChangeResync, because NOTIFYs sent while nobody listened
// are not queued for us.
func (s *Store) Watch(ctx context.Context, fn func(switchboard.Change)) error {
	for failures := 0; ; {
		err := s.listen(ctx, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errListened) {
			failures = 0 // it worked for a while: start the backoff over
			continue
		}
		wait := watchBackoff(failures)
		failures++
		s.log.Warn("listening for changes failed; retrying", "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// errListened: the connection was lost after its LISTEN succeeded, so the
// next attempt is made at once.
var errListened = errors.New("postgres: the listening connection was lost")

// listen connects, LISTENs and hands every notification to fn until the
// connection fails or ctx ends.
func (s *Store) listen(ctx context.Context, fn func(switchboard.Change)) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(dctx, s.connConfig.Copy())
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fn(switchboard.Change{Kind: switchboard.ChangeResync})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.log.Warn("the connection listening for changes was lost; reconnecting", "error", err)
			return errListened
		}
		var c struct {
			Kind    string `json:"kind"`
			Name    string `json:"name"`
			Version int64  `json:"version"`
		}
		if err := json.Unmarshal([]byte(n.Payload), &c); err != nil || c.Kind == "" {
			// Not ours (someone else NOTIFYing the channel), or a payload
			// of a newer schema: compare everything rather than guess.
			s.log.Warn("an unreadable change notification; resynchronising", "payload", n.Payload)
			fn(switchboard.Change{Kind: switchboard.ChangeResync})
			continue
		}
		fn(switchboard.Change{Kind: switchboard.ChangeKind(c.Kind), Name: c.Name, Version: c.Version})
	}
}
