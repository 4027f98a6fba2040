package registry

import (
	"sync"

	sb "github.com/switchboard-mcp/switchboard"
)

// subscriberBuffer is how many events a slow subscriber may fall behind
// before it starts losing them. Events describe state that can always be
// re-read (GET /api/v1/servers), so a lagging watcher loses events rather
// than stalling the sessions that emit them.
const subscriberBuffer = 256

// broadcaster fans events out to subscribers without ever blocking the
// emitter.
type broadcaster struct {
	mu   sync.Mutex
	subs map[chan sb.Event]struct{}
}

// subscribe returns a channel of events and a function that ends the
// subscription and closes the channel.
func (b *broadcaster) subscribe() (<-chan sb.Event, func()) {
	ch := make(chan sb.Event, subscriberBuffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[chan sb.Event]struct{})
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

func (b *broadcaster) publish(e sb.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default: // full: this subscriber misses the event
		}
	}
}
