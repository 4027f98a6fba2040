package upstream

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications are taken off the wire, not from the go-sdk's
// notification handler. The go-sdk retires a response in its read loop but
// runs notification handlers on another goroutine, so a call could return
// before the progress the server sent ahead of its result had been
// delivered, or a callback could run after the call returned. A tap on the
// byte stream sees messages in wire order, in the goroutine that reads
// them: every progress notification is delivered before the bytes that
// follow it (the result) are even parsed. On a byte-stream link the frame
// reader is the tap (frameHooks.line, frames.go); on an HTTP link,
// lineTap below, on each event stream's body.

// maxTapLine bounds the bytes a tap buffers for one message that arrives
// in pieces. Progress notifications are small; a longer line is a result
// or some other message and is passed through unexamined.
const maxTapLine = 64 << 10

var progressMethod = []byte(`"notifications/progress"`)

// lineTap passes a byte stream through unchanged and calls fn with each
// complete line (without its newline), synchronously, before the Read that
// completed the line returns. With sse set, the stream is server-sent
// events: fn receives the data of each event.
type lineTap struct {
	r    io.ReadCloser
	fn   func(msg []byte)
	sse  bool
	line []byte // the current line, when it spans reads
	skip bool   // the current line exceeded maxTapLine
	data []byte // sse: data lines of the current event
}

func (t *lineTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.scan(p[:n])
	return n, err
}

func (t *lineTap) Close() error { return t.r.Close() }

func (t *lineTap) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.hold(b)
			return
		}
		if len(t.line) == 0 && !t.skip {
			t.onLine(b[:i]) // the common case: a whole line in one read, no copy
		} else {
			t.hold(b[:i])
			if !t.skip {
				t.onLine(t.line)
			}
		}
		t.line, t.skip = t.line[:0], false
		b = b[i+1:]
	}
}

func (t *lineTap) hold(b []byte) {
	if t.skip {
		return
	}
	if len(t.line)+len(b) > maxTapLine {
		t.line, t.skip = t.line[:0], true
		return
	}
	t.line = append(t.line, b...)
}

func (t *lineTap) onLine(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !t.sse {
		t.fn(line)
		return
	}
	switch {
	case len(line) == 0: // end of event
		if len(t.data) > 0 {
			t.fn(t.data)
			t.data = t.data[:0]
		}
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[5:], []byte(" "))
		if len(t.data) > 0 {
			t.data = append(t.data, '\n')
		}
		if len(t.data)+len(d) <= maxTapLine {
			t.data = append(t.data, d...)
		}
	}
}

// onWire examines one JSON-RPC message from the server and delivers it if
// it is a progress notification of a call in flight.
func (s *Session) onWire(msg []byte) {
	if len(msg) > maxTapLine || !bytes.Contains(msg, progressMethod) {
		return // a progress notification is short: a long line is a result
	}
	var n struct {
		Method string                         `json:"method"`
		Params mcp.ProgressNotificationParams `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != "notifications/progress" {
		return
	}
	if c := s.calls.byToken(n.Params.ProgressToken); c != nil {
		c.progress(&n.Params)
	}
}
