package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// This file decides which addresses a remote server may have. Whoever may
// add a server could otherwise make Switchboard fetch what only this host
// can reach and they cannot: a cloud's instance metadata (its credentials
// at http://169.254.169.254/...) above all. Loopback and private networks
// stay allowed: local MCP servers are the common case, and whoever may add
// a server may run a command on this host anyway (a stdio server).
//
// The address is checked where it is dialed (net.Dialer.Control), after
// the name was resolved and before connect(2): a name that resolves to an
// allowed address when checked and to a metadata address when dialed (DNS
// rebinding) cannot slip past, and a refused address is never sent a
// single packet.

// blockedNetworks are refused unless a Policy's allow-list re-allows
// them, each with the reason the error gives.
var blockedNetworks = []struct {
	prefix netip.Prefix
	reason string
}{
	// Metadata services first: they are inside the link-local ranges, and
	// the more precise reason wins.
	{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address (AWS, GCP, Azure, OpenStack, ...)"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address (AWS IPv6)"},
	{netip.MustParsePrefix("100.100.100.200/32"), "a cloud metadata address (Alibaba Cloud)"},
	{netip.MustParsePrefix("168.63.129.16/32"), "a cloud metadata address (the Azure host's WireServer)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address, where cloud metadata and host services live"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address, where cloud metadata and host services live"},
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address (this host, by a name that is not loopback)"},
	{netip.MustParsePrefix("::/128"), "the unspecified address (this host, by a name that is not loopback)"},
}

// BlockedAddressError is a remote server's address that Switchboard does
// not connect to: link-local, a cloud metadata service, or unspecified. It
// is returned from the dial before any packet is sent.
type BlockedAddressError struct {
	Addr   netip.Addr
	Reason string // what the address is, e.g. "a cloud metadata address (AWS IPv6)"
}

func (e *BlockedAddressError) Error() string {
	bits := 32
	if e.Addr.Is6() {
		bits = 128
	}
	return fmt.Sprintf("%s is %s: Switchboard does not connect there, so nothing was sent "+
		"(to allow it: switchboard serve --allow-upstream-network %s/%d, or the allowed networks of egress.NewPolicy)",
		e.Addr, e.Reason, e.Addr, bits)
}

// addrPolicy is the blocked networks less an allow-list.
type addrPolicy struct {
	allowed []netip.Prefix
}

// check returns a *BlockedAddressError if addr may not be dialed.
func (p addrPolicy) check(addr netip.Addr) error {
	addr = addr.Unmap() // ::ffff:169.254.169.254 is 169.254.169.254
	for _, a := range p.allowed {
		if a.Contains(addr) {
			return nil
		}
	}
	for _, b := range blockedNetworks {
		if b.prefix.Contains(addr) {
			return &BlockedAddressError{Addr: addr, Reason: b.reason}
		}
	}
	return nil
}

// control is the dialer's hook: it runs for every address the dialer
// tries, after resolution and before connect(2).
func (p addrPolicy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// The net package always passes an IP address and port here; a
		// change of that would be refused rather than let through.
		return fmt.Errorf("dialing %s %q: not an address and port", network, address)
	}
	return p.check(ap.Addr())
}

// proxy is the transport's Proxy. Through a proxy the dial is to the
// proxy, so the hook above never sees the server's address: an address
// literal in the URL is checked here (a name is resolved by the proxy,
// out of Switchboard's sight; see README's Security section).
func (p addrPolicy) proxy(req *http.Request) (*url.URL, error) {
	u, err := http.ProxyFromEnvironment(req)
	if u == nil || err != nil {
		return u, err
	}
	if addr, perr := netip.ParseAddr(strings.Trim(req.URL.Hostname(), "[]")); perr == nil {
		if err := p.check(addr); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// dialer returns the dialer of the policy's transport.
func (p addrPolicy) dialer() *net.Dialer {
	return &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
}

// newTransport returns an HTTP transport whose every connection obeys p.
//
// It has no overall timeout: Streamable HTTP and SSE streams live as long
// as the session, and an http.Client.Timeout would cut them (and long tool
// calls answered as plain JSON) off. Dialing and TLS are bounded; a stream
// GET that never sends headers is bounded by its caller (upstream's roundTripper).
//
// Each HTTP/1 connection keeps a read and a write buffer for its life:
// connBuffer bytes each instead of net/http's 4 KiB. They only gather
// headers and chunk sizes; a body read or written in pieces larger than
// the buffer passes it by. (The event streams that every remote session
// holds open have connections of their own, with a read buffer of the same
// size: streamconn.go.)
func newTransport(p addrPolicy) *http.Transport {
	return &http.Transport{
		Proxy:                 p.proxy,
		DialContext:           p.dialer().DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        connBuffer,
		WriteBufferSize:       connBuffer,
	}
}

// connBuffer is the size of an HTTP/1 connection's read and write buffers
// (see newTransport), and of an event stream's read buffer (streamconn.go).
const connBuffer = 1 << 10

// Policy is where the remote sessions that hold it may connect: the
// blocked networks less an allow-list, and the HTTP transport whose every
// connection obeys them. Sessions that share a Policy share its
// transport's connection pool; a connection dialed under one Policy never
// serves another. Event streams get connections of their own
// (streamconn.go), dialed the same way. Create it with NewPolicy; it is
// safe for concurrent use.
type Policy struct {
	transport *streamTransport
}

// NewPolicy returns the policy that refuses the blocked networks (see
// BlockedAddressError) less allowed, and its transport. Loopback and
// private networks are always allowed.
func NewPolicy(allowed []netip.Prefix) *Policy {
	return &Policy{transport: &streamTransport{newTransport(addrPolicy{allowed: slices.Clone(allowed)})}}
}

// Transport returns the policy's HTTP transport, the same one every time:
// it has no overall timeout (see newTransport), so a caller that wants one
// sets it on its http.Client.
func (p *Policy) Transport() http.RoundTripper { return p.transport }
