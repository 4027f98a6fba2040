package registry

import (
	"context"
	"sync"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// subscriberBuffer is how many events a slow subscriber may fall behind
// before it starts losing them. Events describe state that can always be
// re-read (GET /api/v1/servers), so a lagging watcher loses events rather
// than stalling the sessions that emit them.
const subscriberBuffer = 256

// broadcaster fans values out to subscribers without ever blocking the
// emitter.
type broadcaster[T any] struct {
	mu   sync.Mutex
	subs map[chan T]struct{}
}

// subscribe returns a channel of values and a function that ends the
// subscription and closes the channel.
func (b *broadcaster[T]) subscribe() (<-chan T, func()) {
	ch := make(chan T, subscriberBuffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[chan T]struct{})
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

func (b *broadcaster[T]) publish(e T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default: // full: this subscriber misses the event
		}
	}
}

// firstOutcome is the outcome of a session's first connection attempt, fed
// with the session's events: done is closed when the session connects,
// when an attempt fails (the session may go on retrying: the failure is
// still an answer), or when it stops.
type firstOutcome struct {
	since time.Time // when the session was created
	done  chan struct{}
	once  sync.Once
}

func newFirstOutcome(now time.Time) *firstOutcome {
	return &firstOutcome{since: now, done: make(chan struct{})}
}

// observe settles f on the first event that is an outcome. It runs on the
// session's goroutine and never blocks.
func (f *firstOutcome) observe(ev sb.Event) {
	switch ev.Reason {
	case sb.ReasonConnected, sb.ReasonAttemptFailed, sb.ReasonStopped:
		f.settle()
	}
}

func (f *firstOutcome) settle() { f.once.Do(func() { close(f.done) }) }

// awaited reports whether the outcome is still to come at now, and to be
// waited for: within limit of the session's creation.
func (f *firstOutcome) awaited(now time.Time, limit time.Duration) bool {
	select {
	case <-f.done:
		return false
	default:
		return now.Before(f.since.Add(limit))
	}
}

// wait waits for the outcome, at most until limit after the session's
// creation, or until ctx ends (then it returns the cause).
func (f *firstOutcome) wait(ctx context.Context, limit time.Duration) error {
	timer := time.NewTimer(time.Until(f.since.Add(limit)))
	defer timer.Stop()
	select {
	case <-f.done:
	case <-timer.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}
