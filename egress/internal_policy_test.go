package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// TestAddressPolicy: which addresses a remote server may have, with and
// without an allow-list.
func TestAddressPolicy(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32"), netip.MustParsePrefix("fe80::/10")}
	for _, tc := range []struct {
		addr            string
		blocked         bool // by default
		blockedAllowing bool // with allow
	}{
		{"169.254.169.254", true, false},
		{"::ffff:169.254.169.254", true, false},
		{"169.254.170.2", true, true}, // ECS task metadata: link-local, not in the allow-list
		{"fd00:ec2::254", true, true},
		{"100.100.100.200", true, true},
		{"168.63.129.16", true, true},
		{"fe80::1", true, false},
		{"0.0.0.0", true, true},
		{"::", true, true},
		{"127.0.0.1", false, false},
		{"::1", false, false},
		{"10.1.2.3", false, false},
		{"172.16.0.1", false, false},
		{"192.168.1.1", false, false},
		{"fd12:3456::1", false, false},
		{"100.64.0.1", false, false}, // carrier-grade NAT, Tailscale: private, allowed
		{"8.8.8.8", false, false},
	} {
		addr := netip.MustParseAddr(tc.addr)
		if got := (addrPolicy{}).check(addr) != nil; got != tc.blocked {
			t.Errorf("%s: blocked %v by default, want %v", tc.addr, got, tc.blocked)
		}
		if got := (addrPolicy{allowed: allow}).check(addr) != nil; got != tc.blockedAllowing {
			t.Errorf("%s: blocked %v with %v allowed, want %v", tc.addr, got, allow, tc.blockedAllowing)
		}
	}
}

// TestMetadataAddressIsRefusedInTheDialHook: the refusal happens in the
// dialer's Control hook, on a socket that has no peer: connect(2) was
// never called, so no packet left for 169.254.169.254 (this workplace
// allows none). The hook is the transport's own, observed, not replaced.
func TestMetadataAddressIsRefusedInTheDialHook(t *testing.T) {
	d := addrPolicy{}.dialer()
	hook := d.Control
	type seen struct {
		address string
		peerErr error // getpeername on the socket when the hook ran
		err     error // the hook's verdict
	}
	var calls []seen
	d.Control = func(network, address string, c syscall.RawConn) error {
		var peerErr error
		if err := c.Control(func(fd uintptr) { _, peerErr = syscall.Getpeername(int(fd)) }); err != nil {
			t.Fatal(err)
		}
		err := hook(network, address, c)
		calls = append(calls, seen{address, peerErr, err})
		return err
	}
	conn, err := d.DialContext(context.Background(), "tcp", "169.254.169.254:80")
	if err == nil {
		conn.Close()
		t.Fatal("dialed 169.254.169.254")
	}
	var be *BlockedAddressError
	var oe *net.OpError
	if !errors.As(err, &be) || !errors.As(err, &oe) || oe.Op != "dial" {
		t.Fatalf("dial: %T %v; want a *BlockedAddressError inside the dial's *net.OpError", err, err)
	}
	if len(calls) != 1 || calls[0].address != "169.254.169.254:80" || !errors.As(calls[0].err, &be) {
		t.Fatalf("the hook saw %+v; want one refusal of 169.254.169.254:80", calls)
	}
	if !errors.Is(calls[0].peerErr, syscall.ENOTCONN) {
		t.Fatalf("getpeername when the hook refused: %v; want ENOTCONN (not yet connected)", calls[0].peerErr)
	}
}
