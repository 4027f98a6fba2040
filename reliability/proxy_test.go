package reliability

import (
	"bytes"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// holeProxy is a loopback TCP proxy with a switch that black-holes traffic
// without closing anything: what a client sees when a network path dies
// silently (a NAT entry dropped, a peer powered off), as opposed to a
// server that exits and resets its connections.
//
// While the switch is off it forwards every connection to its target.
// Turning it on freezes every open connection for good: bytes read in
// either direction are discarded and nothing is closed, so the client
// waits for answers that never come. Connections accepted while it is on
// are held the same way and never reach the target. Turning it off again
// affects new connections only, as a client's timed-out connections would
// not come back to life either.
//
// It counts the health probes the client sends into the hole, so that a
// test can bound a wait by the probes, not by time.
type holeProxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	holed     bool
	conns     map[*proxyConn]struct{}
	closed    bool
	swallowed int          // probes sent into the hole since it opened
	waiters   []holeWaiter // of SwallowedProbes
	wg        sync.WaitGroup
}

// holeWaiter is closed once n probes have gone into the hole.
type holeWaiter struct {
	n  int
	ch chan struct{}
}

// proxyConn is one client connection and, unless it was accepted into the
// hole, its upstream connection.
type proxyConn struct {
	client, upstream net.Conn
	mu               sync.Mutex
	frozen           bool
	tail             []byte // the client's last discarded bytes, for a probe split across reads
}

func (c *proxyConn) isFrozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frozen
}

// startHoleProxy listens on 127.0.0.1:0 and forwards to target (host:port).
// It is closed when t ends.
func startHoleProxy(t testing.TB, target string) *holeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &holeProxy{ln: ln, target: target, conns: make(map[*proxyConn]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *holeProxy) Addr() string { return p.ln.Addr().String() }

func (p *holeProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		c := &proxyConn{client: client}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		c.frozen = p.holed
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		if c.frozen {
			p.wg.Go(func() { p.pipe(c, client, nil) })
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			p.drop(c)
			continue
		}
		p.mu.Lock()
		c.upstream = up
		if p.closed {
			p.mu.Unlock()
			up.Close()
			continue
		}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, client, up) })
		p.wg.Go(func() { p.pipe(c, up, client) })
	}
}

// pipe copies src to dst until src fails. Once c is frozen, what it reads
// is discarded. A read error ends the connection, except that the upstream
// side failing behind a frozen connection is not passed on to the client:
// in a black hole, nothing is.
func (p *holeProxy) pipe(c *proxyConn, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		switch {
		case n == 0:
		case !c.isFrozen(): // dst is nil only on a connection frozen from the start
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		case src == c.client:
			p.countProbes(c, buf[:n])
		}
		if err != nil {
			if src == c.client || !c.isFrozen() || errors.Is(err, net.ErrClosed) {
				p.drop(c)
			} else {
				src.Close()
			}
			return
		}
	}
}

// probeMarkers are the methods of a session's health probe: ping, or
// tools/list for servers of the 2026-07-28 protocol, which has no ping.
// Nothing else lists the tools while a session is connected (the test
// server sends no list_changed), and the markers cannot split a message's
// JSON text anywhere else.
var probeMarkers = [][]byte{[]byte(`"method":"ping"`), []byte(`"method":"tools/list"`)}

// countProbes counts the probes that start in data, sent by the client
// into the hole (a marker split across reads counts once, with its end),
// and wakes the waiters they satisfy.
func (p *holeProxy) countProbes(c *proxyConn, data []byte) {
	seen := append(c.tail, data...)
	n, longest := 0, 0
	for _, m := range probeMarkers {
		// From len(m)-1 bytes of the tail on: too short to hold m, so a
		// match found ends in data.
		n += bytes.Count(seen[max(0, len(c.tail)-len(m)+1):], m)
		longest = max(longest, len(m))
	}
	c.tail = slices.Clone(seen[max(0, len(seen)-longest+1):])
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallowed += n
	live := p.waiters[:0]
	for _, w := range p.waiters {
		if p.swallowed >= w.n {
			close(w.ch)
		} else {
			live = append(live, w)
		}
	}
	p.waiters = live
}

// Frozen is how many connections the hole holds that their client has not
// closed: a client may still send on them, into the hole.
func (p *holeProxy) Frozen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if c.isFrozen() {
			n++
		}
	}
	return n
}

// Swallowed is how many probes have gone into the hole since it was last
// opened.
func (p *holeProxy) Swallowed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.swallowed
}

// SwallowedProbes returns a channel closed once n probes have gone into
// the hole since it was last opened.
func (p *holeProxy) SwallowedProbes(n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	if p.swallowed >= n {
		close(ch)
	} else {
		p.waiters = append(p.waiters, holeWaiter{n, ch})
	}
	return ch
}

// drop closes both sides of c and forgets it.
func (p *holeProxy) drop(c *proxyConn) {
	p.mu.Lock()
	delete(p.conns, c)
	up := c.upstream
	p.mu.Unlock()
	c.client.Close()
	if up != nil {
		up.Close()
	}
}

// Blackhole turns the switch on (true) or off (false). Turning it on
// starts the count of SwallowedProbes again.
func (p *holeProxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holed = on
	if on {
		p.swallowed = 0
		for c := range p.conns {
			c.mu.Lock()
			c.frozen = true
			c.mu.Unlock()
		}
	}
}

// Close stops the proxy, closes every connection and waits for its
// goroutines. It is safe to call more than once.
func (p *holeProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		p.drop(c)
	}
	p.wg.Wait()
}
