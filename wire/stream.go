package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the connection over a byte stream (a stdio server's pipes,
// or the stream Options.Dial of upstream returns): newline-delimited
// JSON-RPC, as the go-sdk's IOTransport speaks it. One read loop reads
// every message; the answer to a Call is taken off the stream there, as
// bytes, and every other message is decoded and given to the go-sdk's
// Read, in the order it came.

// keptLine is the largest line buffer a stream keeps between messages.
const keptLine = 64 << 10

// errEmptyBatch is the decoding error of the batch [].
var errEmptyBatch = errors.New("empty batch")

// Stream is a Conn over a byte stream.
type Stream struct {
	r     io.ReadCloser
	w     io.WriteCloser
	limit int
	onMsg func([]byte)
	onEnd func()

	writeMu sync.Mutex

	incoming chan jsonrpc.Message
	queue    []jsonrpc.Message // the rest of a batch; Read is not concurrent

	// longLine sizes the buffer of a line read in chunks (readLine); only
	// the read loop uses it.
	longLine int

	ids     ids
	mu      sync.Mutex
	pending map[string]chan reply // Call requests awaiting their answer
	err     *Error                // why reading stopped; valid once done is closed
	done    chan struct{}         // closed when reading stops
	// spare are channels whose answer was taken, for the next Calls: a
	// channel with room for a reply costs two allocations. Only one whose
	// answer was received is kept, since route sends at most once to a
	// channel it found pending, and no later.
	spare []chan reply

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{} // closed by Close
}

// NewStream returns a connection that reads r and writes w, and starts
// reading. Close closes both.
func NewStream(r io.ReadCloser, w io.WriteCloser, opts *Options) *Stream {
	c := &Stream{r: r, w: w, incoming: make(chan jsonrpc.Message),
		pending: make(map[string]chan reply), done: make(chan struct{}), closed: make(chan struct{})}
	if opts != nil {
		c.limit, c.onMsg, c.onEnd = opts.Limit, opts.OnMessage, opts.OnEnd
	}
	go c.readLoop()
	return c
}

// readLoop reads the stream until it ends, routing Call answers to their
// callers and handing the rest, decoded, to Read.
func (c *Stream) readLoop() {
	br := bufio.NewReader(c.r)
	var line []byte
	var err *Error
	for {
		if cap(line) > keptLine {
			line = nil // an idle connection does not keep the largest message it ever read
		}
		var rerr error
		line, rerr = c.readLine(br, line[:0])
		if rerr != nil {
			err = c.ending(rerr)
			break
		}
		msg := bytes.TrimSpace(line)
		if len(msg) == 0 {
			continue
		}
		if c.onMsg != nil {
			c.onMsg(msg)
		}
		if mayAnswerCall(msg) && c.route(msg) {
			line = nil // the answer's result is a part of it, now the caller's
			continue
		}
		msgs, derr := decodeBatch(msg)
		for _, m := range msgs {
			if !c.deliver(m) {
				break
			}
		}
		if derr != nil {
			err = &Error{Kind: KindProtocol, Err: derr}
			break
		}
	}
	c.mu.Lock()
	c.err = err
	close(c.done)
	if c.onEnd != nil {
		go c.onEnd()
	}
	c.mu.Unlock()
}

// ending is the error that ends the connection when reading fails with err.
func (c *Stream) ending(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we // the message over the limit
	}
	select {
	case <-c.closed:
		return &Error{Kind: KindClosed, Err: errClosedByClient}
	default:
	}
	return &Error{Kind: KindClosed, Err: err}
}

// errClosedByClient is why a connection that Close ended stopped.
var errClosedByClient = errors.New("closed by the client")

// deliver hands one message to Read, unless the connection is closed.
func (c *Stream) deliver(m jsonrpc.Message) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line into buf, failing once it passes the limit.
//
// A line longer than the reader's buffer comes in chunks. Its buffer, if
// it must be made, is made at once a little larger than the last such
// line, rather than grown a quarter at a time (a 64 KiB line took fourteen
// allocations and five times its size in copies); a server answers a tool
// much as it answered it before.
func (c *Stream) readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for chunks := 1; ; chunks++ {
		chunk, err := br.ReadSlice('\n')
		if chunks == 1 && errors.Is(err, bufio.ErrBufferFull) && cap(buf) < c.longLine {
			buf = make([]byte, 0, c.longLine)
		}
		buf = append(buf, chunk...)
		if c.limit > 0 && len(buf) > c.limit {
			return nil, &Error{Kind: KindTooLarge, Sent: true, Limit: c.limit}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil, err == io.EOF && len(bytes.TrimSpace(buf)) > 0: // the last without its newline
			if chunks > 1 {
				c.longLine = len(buf) + len(buf)/8
			}
			return buf, nil
		}
		return nil, err
	}
}

// route gives msg to the Call it answers, if it is such an answer, and
// reports whether it was; the Call then owns msg.
func (c *Stream) route(msg []byte) bool {
	id, r, ok := parseReply(msg)
	if !ok {
		return false
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- r // buffered
	}
	return true // an answer to a Call given up on (cancelled) is dropped
}

// Read implements mcp.Connection.
func (c *Stream) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		select {
		case m := <-c.incoming: // delivered as reading stopped
			return m, nil
		default:
		}
		return nil, c.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection.
func (c *Stream) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	return c.writeLine(append(data, '\n'))
}

func (c *Stream) writeLine(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close implements mcp.Connection.
func (c *Stream) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: a byte stream has no session id.
func (c *Stream) SessionID() string { return "" }

// Done implements Conn.
func (c *Stream) Done() <-chan struct{} { return c.done }

// Err implements Conn: why reading stopped, once it has.
func (c *Stream) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return c.err
}

// Call implements Conn.
func (c *Stream) Call(ctx context.Context, req *Request) (json.RawMessage, error) {
	id := c.ids.take()
	c.mu.Lock()
	select {
	case <-c.done:
		err := c.err.unsent()
		c.mu.Unlock()
		return nil, err
	default:
	}
	var ch chan reply
	if n := len(c.spare); n > 0 {
		ch, c.spare = c.spare[n-1], c.spare[:n-1]
	} else {
		ch = make(chan reply, 1)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	answered := func(r reply) (json.RawMessage, error) {
		c.mu.Lock()
		c.spare = append(c.spare, ch)
		c.mu.Unlock()
		return r.outcome()
	}
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	line := appendRequest(make([]byte, 0, 96+len(req.Method)+len(req.Params)), id, req)
	if err := c.writeLine(append(line, '\n')); err != nil {
		forget()
		// A pipe takes a line whole or not at all as far as the server's
		// reader can tell: a failed write is one the server never read.
		return nil, &Error{Kind: KindClosed, Err: err}
	}
	select {
	case r := <-ch:
		return answered(r)
	case <-c.done:
		forget()
		select {
		case r := <-ch: // the answer came just before the end
			return r.outcome()
		default:
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, c.err.inFlight()
	case <-ctx.Done():
		forget()
		c.writeLine(append(cancelled(id, context.Cause(ctx).Error()), '\n'))
		return nil, ctx.Err()
	}
}

// inFlight is e, the end of the connection, as the failure of a request
// that was sent and waited for its answer: the connection ended under it,
// for the reason e gives (a message over the limit may have been this
// request's answer).
func (e *Error) inFlight() *Error {
	cp := *e
	cp.Sent = true
	return &cp
}

// unsent is e as the failure of a request that was not sent because the
// connection had ended (or would have been e, had it not ended).
func (e *Error) unsent() *Error {
	cp := *e
	cp.Sent = false
	if cp.Kind == KindTooLarge {
		cp = Error{Kind: KindClosed, Err: e}
	}
	return &cp
}

var _ Conn = (*Stream)(nil)
var _ mcp.Connection = (*Stream)(nil)
