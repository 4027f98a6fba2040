package upstream

import (
	"sync"
	"time"
)

// callTimer is the per-request timer of one call: reset by progress (when
// asked), paused while a person answers an elicitation.
type callTimer struct {
	mu       sync.Mutex
	d        time.Duration
	t        *time.Timer
	deadline time.Time     // when t fires, while running
	paused   int           // elicitations in progress
	left     time.Duration // time remaining when paused
}

func newCallTimer(d time.Duration, fire func()) *callTimer {
	return &callTimer{d: d, t: time.AfterFunc(d, fire), deadline: time.Now().Add(d)}
}

func (c *callTimer) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 {
		c.left = c.d
		return
	}
	if c.t.Stop() { // not fired yet
		c.t.Reset(c.d)
		c.deadline = time.Now().Add(c.d)
	}
}

func (c *callTimer) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused == 1 && c.t.Stop() {
		c.left = time.Until(c.deadline)
	}
}

func (c *callTimer) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused == 0 && c.left > 0 {
		c.t.Reset(c.left)
		c.deadline = time.Now().Add(c.left)
		c.left = 0
	}
}

func (c *callTimer) stop() { c.t.Stop() }
