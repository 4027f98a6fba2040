package upstream_test

// The test server running in this process, reached through Options.Dial
// over in-memory pipes, for testing/synctest bubbles: a real process's I/O
// would keep the fake clock from advancing. memDialer adds what a real
// process or network would do to a connection: take its time, refuse,
// drop, go silent, or send a line that is not JSON.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// inProcess returns a started session to the test server running in this
// process over in-memory pipes.
func inProcess(t *testing.T, opts testserver.Options) *upstream.Session {
	t.Helper()
	srv, err := testserver.NewInProcess(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := upstream.New(memConfig(), &upstream.Options{
		Logger: slog.New(slog.DiscardHandler),
		Dial:   testserver.DialInProcess(srv),
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// memConfig is the config of a session whose Options.Dial reaches an
// in-process server: the command is never run.
func memConfig() *sb.ServerConfig {
	return &sb.ServerConfig{Name: "mem", Transport: sb.TransportStdio, Command: "in-process"}
}

// memDialer is an Options.Dial that connects to the in-process test
// server, keeping every connection it made so that a test can break it.
type memDialer struct {
	srv *mcp.Server
	// before, if set, runs before the nth connection (from 1) is made, in
	// the dialing goroutine: it may sleep (a slow handshake), block on the
	// test (a held reconnect), or fail (a refused connection).
	before func(ctx context.Context, n int) error
	// corrupt, if set, names a method whose responses the server's side
	// replaces with a line that is not JSON.
	corrupt string
	// swallow, if set, names a method whose requests never reach the
	// server, which so never answers them; swallowed, if set, is told of
	// each (buffered by the test, or it blocks the session's write).
	swallow   string
	swallowed chan<- string

	mu    sync.Mutex
	conns []*faultConn
}

func newMemDialer(t *testing.T, opts testserver.Options) *memDialer {
	t.Helper()
	srv, err := testserver.NewInProcess(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &memDialer{srv: srv}
}

func (d *memDialer) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	d.mu.Lock()
	n := len(d.conns) + 1
	d.mu.Unlock()
	if d.before != nil {
		if err := d.before(ctx, n); err != nil {
			d.mu.Lock()
			d.conns = append(d.conns, nil) // the nth dial made no connection
			d.mu.Unlock()
			return nil, err
		}
	}
	client, server, err := testserver.PipeTo(ctx, d.srv)
	if err != nil {
		return nil, err
	}
	c := &faultConn{Conn: client, peer: server, br: bufio.NewReader(client), corrupt: d.corrupt, ids: map[string]bool{},
		swallow: d.swallow, swallowed: d.swallowed}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// conn returns the nth connection made (from 1), nil if that dial failed.
func (d *memDialer) conn(n int) *faultConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[n-1]
}

// dials returns how many dials have begun to connect (made or failed).
func (d *memDialer) dials() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// faultConn is the session's end of one in-memory connection.
type faultConn struct {
	net.Conn          // the session's end of the pipe
	peer     net.Conn // the server's end
	br       *bufio.Reader
	corrupt  string
	dark     atomic.Bool // the session's messages are swallowed

	swallow   string        // a method whose requests are swallowed (memDialer.swallow)
	swallowed chan<- string // told the method of each swallowed request; may be nil

	mu      sync.Mutex
	ids     map[string]bool // raw ids of the session's requests for corrupt
	pending []byte          // the rest of the line being read
}

// malformedLine is what a corrupted response is replaced with.
const malformedLine = `{"jsonrpc":"2.0", this is not json` + "\n"

// drop ends the connection from the server's side, as a server that exits
// or a network that resets would: the session reads EOF.
func (c *faultConn) drop() { c.peer.Close() }

// blackHole makes the connection swallow everything the session sends
// from now on; the server never sees it, so it never answers.
func (c *faultConn) blackHole() { c.dark.Store(true) }

// Write sends one message of the session (the go-sdk writes one per call).
func (c *faultConn) Write(p []byte) (int, error) {
	if c.corrupt != "" {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(p, &m) == nil && m.Method == c.corrupt && m.ID != nil {
			c.mu.Lock()
			c.ids[string(m.ID)] = true
			c.mu.Unlock()
		}
	}
	if c.dark.Load() {
		return len(p), nil
	}
	if c.swallow != "" {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(p, &m) == nil && m.Method == c.swallow {
			if c.swallowed != nil {
				c.swallowed <- m.Method
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// Read passes the server's messages through a line at a time, replacing
// the responses to corrupt.
func (c *faultConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) == 0 {
		c.mu.Unlock()
		line, err := c.br.ReadBytes('\n')
		c.mu.Lock()
		c.pending = c.corrupted(line)
		if err != nil && len(c.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// corrupted returns line, or malformedLine if line is a response to a
// request for c.corrupt. c.mu is held.
func (c *faultConn) corrupted(line []byte) []byte {
	if c.corrupt == "" || len(line) == 0 {
		return line
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &m) != nil || m.Method != "" || !c.ids[string(m.ID)] {
		return line
	}
	return []byte(malformedLine)
}
