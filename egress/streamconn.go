package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
)

// This file carries the GET of an event stream over a TCP connection of its
// own, without net/http's Transport. Every idle remote session holds one
// such stream open for its whole life (the go-sdk's standalone Streamable
// HTTP stream, or the legacy SSE stream), and net/http serves each HTTP/1
// connection with two goroutines of its own (persistConn's read and write
// loops, a 4 KiB stack each), a write buffer and its bookkeeping, for a
// response that one goroutine (the go-sdk's reader) reads from start to
// end and that never shares its connection. A daemon with 2,000 idle
// remote servers took 14 KiB less per server without them.
//
// On the wire the request is what net/http sends (http.Request.Write)
// less the Accept-Encoding: gzip that net/http adds and undoes itself: a
// stream is not compressed. The connection is not reused once its stream
// has ended.

// streamTransport is the transport of remote sessions: an event-stream GET
// to a plain http:// URL that no proxy serves goes over a connection of its
// own (stream); every other request, and those streams too when a proxy or
// TLS is involved, goes through the embedded Transport.
type streamTransport struct {
	*http.Transport
}

func (t *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.ownsStream(req) {
		return t.Transport.RoundTrip(req)
	}
	return t.stream(req)
}

// ownsStream reports whether req is an event-stream GET that stream
// carries: plain HTTP (a TLS connection may negotiate HTTP/2, where
// streams share one connection anyway), an ASCII host name (net/http
// converts others for the dial), no body, and no proxy (the Transport's
// Proxy answers for the policy too: an error it returns, the Transport
// returns).
func (t *streamTransport) ownsStream(req *http.Request) bool {
	if req.Method != http.MethodGet || req.URL.Scheme != "http" || (req.Body != nil && req.Body != http.NoBody) ||
		req.Header.Get("Accept") != "text/event-stream" || !isASCII(req.URL.Host) {
		return false
	}
	if t.Proxy != nil {
		if u, err := t.Proxy(req); u != nil || err != nil {
			return false
		}
	}
	return true
}

// stream sends req over a new connection and returns the response, whose
// body owns the connection: reading it reads the socket, closing it closes
// the socket. The request's context bounds it all: when it ends, the
// connection is closed, and the read or wait in progress fails with the
// context's error, as net/http's would.
func (t *streamTransport) stream(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	conn, err := t.DialContext(ctx, "tcp", net.JoinHostPort(req.URL.Hostname(), port))
	if err != nil {
		return nil, err
	}
	c := &streamConn{Conn: conn, ctx: ctx}
	c.stop = context.AfterFunc(ctx, func() { conn.Close() })
	resp, err := c.exchange(req)
	if err != nil {
		c.Close()
		return nil, c.why(err)
	}
	return resp, nil
}

// maxInformational bounds the 1xx answers skipped before the response, as
// net/http does.
const maxInformational = 5

// exchange writes req and reads its response, skipping informational
// (1xx) answers; the response's body reads through c.
func (c *streamConn) exchange(req *http.Request) (*http.Response, error) {
	if err := req.Write(c.Conn); err != nil {
		return nil, err
	}
	// Headers are read under a bound, as net/http does; the body is not.
	lim := &io.LimitedReader{R: c.Conn, N: maxHeaderBytes}
	br := bufio.NewReaderSize(lim, connBuffer)
	for range maxInformational + 1 {
		resp, err := http.ReadResponse(br, req)
		if lim.N <= 0 { // the caller closes the connection, and with it resp
			return nil, fmt.Errorf("the server's response headers exceeded %d bytes", maxHeaderBytes)
		}
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			lim.N = math.MaxInt64
			resp.Body = &streamBody{body: resp.Body, c: c}
			return resp, nil
		}
	}
	return nil, errors.New("too many 1xx informational responses")
}

// maxHeaderBytes bounds the headers of a stream's response: net/http's
// default for a Transport's MaxResponseHeaderBytes.
const maxHeaderBytes = 10 << 20

// streamConn is a stream's connection, closed once.
type streamConn struct {
	net.Conn
	ctx  context.Context
	stop func() bool // unregisters the close on the context's end
	once sync.Once
	err  error
}

func (c *streamConn) Close() error {
	c.once.Do(func() {
		c.stop()
		if err := c.Conn.Close(); !errors.Is(err, net.ErrClosed) { // closed by the context's end
			c.err = err
		}
	})
	return c.err
}

// why returns the context's error for a failure the context's end caused
// (the connection was closed under the read), err otherwise.
func (c *streamConn) why(err error) error {
	if ctxErr := c.ctx.Err(); ctxErr != nil && err != io.EOF {
		return ctxErr
	}
	return err
}

// streamBody is a stream's response body.
type streamBody struct {
	body io.ReadCloser // net/http's reader of the body (chunked or not)
	c    *streamConn
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil {
		err = b.c.why(err)
	}
	return n, err
}

// Close closes the connection. The body's own Close is not called: it
// reads what is left of the body first, which for a stream that is still
// open is forever.
func (b *streamBody) Close() error { return b.c.Close() }

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
