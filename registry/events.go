package registry

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Notification is a server's notification that is not about one call: a
// log message (*mcp.LoggingMessageParams) or a resource update
// (*mcp.ResourceUpdatedNotificationParams).
type Notification struct {
	Server string
	Params mcp.Params
}

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
