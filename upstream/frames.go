package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// This file is the connection under the go-sdk client on a byte stream
// (stdio, Options.Dial): newline-delimited JSON-RPC, like the go-sdk's
// IOTransport, with one difference. A tool call relayed as bytes
// (relay.go) is written here with an id of its own ("sb-relay-N", a
// namespace the go-sdk, which numbers its requests, never uses) and its
// response is taken off the stream here, as bytes, before the go-sdk would
// decode it. Every other message is decoded and given to the go-sdk as
// before, in the order it came.

// keptLine is the largest line buffer a connection keeps between messages.
const keptLine = 64 << 10

// relayIDPrefix starts the id of every relayed request.
const relayIDPrefix = "sb-relay-"

var relayIDQuoted = []byte(`"` + relayIDPrefix)

// errFrameTooLarge ends the connection on a message over the size cap
// (the tap has marked the link by then).
var errFrameTooLarge = errors.New("the server sent a message over the size limit")

// frameTransport is an mcp.Transport over r and w whose connection is
// kept in conn once the go-sdk connects.
type frameTransport struct {
	r     io.ReadCloser
	w     io.WriteCloser
	limit int
	hooks frameHooks
	conn  **frameConn
}

// frameHooks are what the read loop tells of the stream as it reads it,
// on its own goroutine, in the stream's order.
type frameHooks struct {
	// line, if set, sees every message before anything else is done with
	// it: a progress notification is delivered before the result that
	// follows it is even routed (tap.go).
	line func(msg []byte)
	// oversize, if set, is called once if a message passes the limit,
	// before the connection ends because of it.
	oversize func()
}

func (t *frameTransport) Connect(context.Context) (mcp.Connection, error) {
	c := newFrameConn(t.r, t.w, t.limit, t.hooks)
	*t.conn = c
	return c, nil
}

// relayReply is the answer to a relayed request: its result or its error,
// as the server wrote them.
type relayReply struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

type readOrErr struct {
	msg jsonrpc.Message
	err error
}

// frameConn implements mcp.Connection.
type frameConn struct {
	rc    io.ReadCloser
	w     io.WriteCloser
	limit int
	hooks frameHooks

	writeMu sync.Mutex

	incoming chan readOrErr
	queue    []jsonrpc.Message // the rest of a batch; Read is not concurrent

	// longLine sizes the buffer of a line read in chunks (readLine); only
	// the read loop uses it.
	longLine int

	next    atomic.Uint64
	mu      sync.Mutex
	pending map[string]chan relayReply // relayed requests awaiting their reply
	readErr error                      // why reading stopped; valid once ended is closed
	ended   chan struct{}              // closed when reading stops

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

func newFrameConn(rc io.ReadCloser, w io.WriteCloser, limit int, hooks frameHooks) *frameConn {
	c := &frameConn{rc: rc, w: w, limit: limit, hooks: hooks, incoming: make(chan readOrErr),
		pending: make(map[string]chan relayReply), ended: make(chan struct{}), closed: make(chan struct{})}
	go c.readLoop()
	return c
}

// readLoop reads the stream until it ends, routing relayed replies to
// their callers and handing the rest, decoded, to Read.
func (c *frameConn) readLoop() {
	br := bufio.NewReader(c.rc)
	var line []byte
	var err error
	for {
		if cap(line) > keptLine {
			line = nil // an idle link does not keep the largest message it ever read
		}
		line, err = c.readLine(br, line[:0])
		if err != nil {
			if errors.Is(err, errFrameTooLarge) && c.hooks.oversize != nil {
				c.hooks.oversize()
			}
			break
		}
		msg := bytes.TrimSpace(line)
		if len(msg) == 0 {
			continue
		}
		if c.hooks.line != nil {
			c.hooks.line(msg)
		}
		if c.routeReply(msg) {
			line = nil // the reply's result is a part of it, now the caller's
			continue
		}
		msgs, derr := decodeFrame(msg)
		for _, m := range msgs {
			if !c.deliver(readOrErr{msg: m}) {
				break
			}
		}
		if derr != nil {
			err = derr
			break
		}
	}
	c.mu.Lock()
	c.readErr = err
	close(c.ended)
	c.mu.Unlock()
	c.deliver(readOrErr{err: err})
}

// deliver hands one read to Read, unless the connection is closed.
func (c *frameConn) deliver(r readOrErr) bool {
	select {
	case c.incoming <- r:
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
func (c *frameConn) readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for chunks := 1; ; chunks++ {
		chunk, err := br.ReadSlice('\n')
		if chunks == 1 && errors.Is(err, bufio.ErrBufferFull) && cap(buf) < c.longLine {
			buf = make([]byte, 0, c.longLine)
		}
		buf = append(buf, chunk...)
		if c.limit > 0 && len(buf) > c.limit {
			return nil, errFrameTooLarge
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

// decodeFrame decodes one line: a message, or a batch of them (which
// protocols before 2025-06-18 allow). A line that is not JSON at all is
// named by encoding/json's error ("invalid character ..."), as the
// go-sdk's own stream decoder names it.
func decodeFrame(line []byte) ([]jsonrpc.Message, error) {
	if !json.Valid(line) {
		var raw json.RawMessage
		return nil, json.Unmarshal(line, &raw)
	}
	if line[0] != '[' {
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// routeReply gives line to the relayed request it answers, if it is such
// a reply, and reports whether it was; the request then owns line.
func (c *frameConn) routeReply(line []byte) bool {
	if !bytes.Contains(line, relayIDQuoted) {
		return false // the common case for every message not relayed
	}
	id, reply, ok := parseReply(line)
	if !ok {
		return false
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch == nil {
		return true // a reply to a request given up on (cancelled): drop it
	}
	ch <- reply // buffered
	return true
}

// parseReply reads a response with a relay id: its id and its result or
// error (the result is a part of line).
func parseReply(line []byte) (id string, reply relayReply, ok bool) {
	var result, rpcErr []byte
	isRequest := false
	err := rawjson.Members(line, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			id, _ = rawjson.String(v)
		case "method":
			isRequest = true
		case "result":
			result = v
		case "error":
			rpcErr = v
		}
		return true
	})
	if err != nil || isRequest || len(id) <= len(relayIDPrefix) || id[:len(relayIDPrefix)] != relayIDPrefix {
		return "", relayReply{}, false
	}
	switch {
	case rpcErr != nil:
		var e jsonrpc.Error
		if json.Unmarshal(rpcErr, &e) != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server answered with a malformed error"}
		}
		reply.err = &e
	case result != nil:
		reply.result = result
	default:
		reply.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server answered with neither a result nor an error"}
	}
	return id, reply, true
}

// closingError is what a request made once reading has stopped fails
// with: the go-sdk's "client is closing" (the request was never sent),
// naming why reading stopped, as the go-sdk names it. c.mu is held.
func (c *frameConn) closingError() error {
	msg := clientClosingText
	if c.readErr != nil {
		msg += ": " + c.readErr.Error()
	}
	return &jsonrpc.Error{Code: codeClientClosing, Message: msg}
}

// Read implements mcp.Connection.
func (c *frameConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection.
func (c *frameConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	return c.writeLine(append(data, '\n'))
}

func (c *frameConn) writeLine(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close implements mcp.Connection.
func (c *frameConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.rc.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}

// SessionID implements mcp.Connection.
func (c *frameConn) SessionID() string { return "" }

// call sends a relayed request, made by build from its id, and waits for
// its reply. If ctx ends first, the server is told with
// notifications/cancelled, as the go-sdk would.
func (c *frameConn) call(ctx context.Context, build func(id string) []byte) (relayReply, error) {
	id := relayIDPrefix + strconv.FormatUint(c.next.Add(1), 10)
	ch := make(chan relayReply, 1)
	c.mu.Lock()
	select {
	case <-c.ended:
		err := c.closingError()
		c.mu.Unlock()
		return relayReply{}, err
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.writeLine(build(id)); err != nil {
		forget()
		return relayReply{}, fmt.Errorf("writing the request: %w: %w", err, mcp.ErrConnectionClosed)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.ended:
		forget()
		select {
		case r := <-ch: // the reply came just before the end
			return r, nil
		default:
		}
		return relayReply{}, fmt.Errorf("%w: %v", mcp.ErrConnectionClosed, c.readErr)
	case <-ctx.Done():
		forget()
		reason, _ := json.Marshal(context.Cause(ctx).Error())
		c.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `","reason":` + string(reason) + "}}\n"))
		return relayReply{}, ctx.Err()
	}
}
