package httpapi

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/metrics"
)

// This file bounds the connections of serve's listener. Keep-alive
// connections cost a file descriptor each whether or not they carry a
// credential: about 20,000 idle /healthz connections reached serve's
// open-file limit, and the API and /mcp stopped answering. The
// http.Server's timeouts close idle ones (serve.go); Listener caps those
// that one peer address holds open at once, so that one client cannot take
// every descriptor from the others.

// DefaultMaxConnsPerAddress leaves one host room for a connection per
// MCP session it may hold (gateway.DefaultMaxSessionsPerAddress, each
// with an event stream and a request in flight) and the CLI besides.
const DefaultMaxConnsPerAddress = 1024

// refusedWarnEvery spaces the warnings logged for refused connections (a
// client that retries at once must not fill the log; each is counted).
const refusedWarnEvery = time.Minute

// Listener is a net.Listener that closes at once a connection from a peer
// address that already holds MaxPerAddress open connections: the peer
// sees its connection closed before any answer. An address is a
// connection's remote IP, an IPv6 address by its /64 (the MCP session cap
// counts the same way); a connection without one (a Unix socket) is not
// capped. Create it with Limit.
type Listener struct {
	net.Listener
	max  int // 0: no cap
	log  *slog.Logger
	idle time.Duration // reported only: the http.Server enforces it

	mu      sync.Mutex
	open    int
	byAddr  map[netip.Prefix]int
	refused uint64
	warned  time.Time
}

// ListenerOptions configure Limit.
type ListenerOptions struct {
	// MaxPerAddress caps the open connections of one peer address. If
	// zero, DefaultMaxConnsPerAddress is used; if negative, there is no
	// cap.
	MaxPerAddress int
	// IdleTimeout is the http.Server's, shown in ConnStats.
	IdleTimeout time.Duration
	Logger      *slog.Logger
}

// Limit returns ln with its connections capped as o says.
func Limit(ln net.Listener, o ListenerOptions) *Listener {
	switch {
	case o.MaxPerAddress == 0:
		o.MaxPerAddress = DefaultMaxConnsPerAddress
	case o.MaxPerAddress < 0:
		o.MaxPerAddress = 0
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Listener{Listener: ln, max: o.MaxPerAddress, log: o.Logger, idle: o.IdleTimeout, byAddr: make(map[netip.Prefix]int)}
}

// Accept returns the next connection within the cap, closing those over it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peerAddr(c.RemoteAddr())
		if l.admit(addr) {
			return &conn{Conn: c, l: l, addr: addr}, nil
		}
		c.Close()
	}
}

// admit counts a new connection from addr, or reports that the cap
// refuses it.
func (l *Listener) admit(addr netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && addr.IsValid() && l.byAddr[addr] >= l.max {
		l.refused++
		if now := time.Now(); now.Sub(l.warned) >= refusedWarnEvery {
			l.warned = now
			l.log.Warn("refusing connections: a client address holds the most it may", "addr", addr.String(), "max", l.max, "refused_total", l.refused)
		}
		return false
	}
	l.open++
	if addr.IsValid() {
		l.byAddr[addr]++
	}
	return true
}

func (l *Listener) release(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if addr.IsValid() {
		if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
			delete(l.byAddr, addr)
		}
	}
}

// ConnStats returns the counts of the listener's connections, for
// /metrics. It is safe for concurrent use.
func (l *Listener) ConnStats() metrics.ConnStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return metrics.ConnStats{Open: l.open, MaxPerAddress: l.max, RefusedPerAddress: l.refused, IdleTimeout: l.idle}
}

// peerAddr is the address a connection counts under: its remote IP, an
// IPv6 address by its /64; invalid if it has none.
func peerAddr(a net.Addr) netip.Prefix {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// conn is an accepted connection, counted until it is closed.
type conn struct {
	net.Conn
	l    *Listener
	addr netip.Prefix
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}

// CloseWrite passes on to the TCP connection: the http.Server half-closes
// a connection it is ending after an unread request body, so that the
// client reads the answer before the reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
