package client

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

// TestSocketOwnerFindsTheServersEnd: the owner of the other end of a
// loopback connection is found in /proc/net/tcp or tcp6, for a listener
// on 127.0.0.1, on the IPv4 wildcard, and on a dual-stack [::] reached by
// 127.0.0.1; the process holding it (this one) is found by its inode.
func TestSocketOwnerFindsTheServersEnd(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:0", "0.0.0.0:0", "[::]:0"} {
		t.Run(listen, func(t *testing.T) {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				t.Skipf("listen %s: %v", listen, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			conn, err := net.Dial("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			srv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s, known, err := socketOwner(conn)
			if err != nil || !known {
				t.Fatalf("socketOwner: known %v, %v", known, err)
			}
			if s.uid != os.Geteuid() {
				t.Errorf("uid %d, want %d", s.uid, os.Geteuid())
			}
			if pid := s.pid(); pid != os.Getpid() {
				t.Errorf("pid %d, want this process's %d", pid, os.Getpid())
			}
		})
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1CFC":                         "127.0.0.1:7420",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:1CFC": "[::1]:7420",
		"0000000000000000FFFF00000100007F:1CFC": "127.0.0.1:7420", // a dual-stack socket's IPv4 peer
	} {
		got, ok := parseProcAddr(in)
		if !ok || got.String() != want {
			t.Errorf("parseProcAddr(%s) = %v %v, want %s", in, got, ok, want)
		}
	}
}
