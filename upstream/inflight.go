package upstream

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// call is one CallTool in flight, as the session's notification handlers
// see it.
type call struct {
	opts  sb.InvokeOptions
	timer *callTimer
	ctx   context.Context // ends with the call: the caller, the hard cap, the request timer (paused while a server request is answered)

	mu           sync.Mutex
	lastProgress *sb.Progress
	progressed   int  // notifications delivered, for the call's span
	done         bool // returned: late notifications are dropped
}

// progress delivers one notification. The lock is held through the
// callback so that finish, and with it the return of CallTool, waits for a
// callback in progress: no callback ever runs after the call returned.
func (c *call) progress(p *mcp.ProgressNotificationParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return // sent after the result: too late
	}
	pr := sb.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}
	c.lastProgress = &pr
	c.progressed++
	if c.opts.ResetTimeoutOnProgress {
		c.timer.reset()
	}
	if c.opts.OnProgress != nil {
		c.opts.OnProgress(pr)
	}
}

func (c *call) finish() *sb.Progress {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	return c.lastProgress
}

// calls tracks a session's calls in flight, for routing progress (by
// token, see tap.go) and server requests (see serverrequest.go).
type calls struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[string]*call
}

func (cs *calls) add(c *call) string {
	tok := "sb-" + strconv.FormatUint(cs.next.Add(1), 10)
	cs.mu.Lock()
	if cs.m == nil {
		cs.m = make(map[string]*call)
	}
	cs.m[tok] = c
	cs.mu.Unlock()
	return tok
}

func (cs *calls) remove(tok string) {
	cs.mu.Lock()
	delete(cs.m, tok)
	cs.mu.Unlock()
}

func (cs *calls) byToken(tok any) *call {
	s, ok := tok.(string)
	if !ok {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.m[s]
}
