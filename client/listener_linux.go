package client

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procNetTCP are the kernel's tables of this network namespace's TCP
// sockets, IPv4 and IPv6 (where a dual-stack listener's IPv4 connections
// are, as ::ffff:a.b.c.d).
var procNetTCP = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = 0x0A

// peerSocket is the socket at the other end of a connection, as the
// kernel's socket tables give it.
type peerSocket struct {
	uid    int
	inodes []uint64 // the accepted socket's, then the listener's
}

// socketOwner finds, in /proc/net/tcp and tcp6, the socket at the other
// end of conn, a connection to a loopback address: the one the server
// accepted (local address conn's remote, remote address conn's local),
// whose uid is the listener's, or, if the kernel has not made it yet,
// the listener on that address or on the wildcard address of that port.
func socketOwner(conn net.Conn) (peerSocket, bool, error) {
	local, lok := conn.LocalAddr().(*net.TCPAddr)
	remote, rok := conn.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return peerSocket{}, false, nil
	}
	me, peer := local.AddrPort(), remote.AddrPort()
	me = netip.AddrPortFrom(me.Addr().Unmap(), me.Port())
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	var accepted, listener *peerSocket
	for _, table := range procNetTCP {
		err := scanTCP(table, func(e tcpEntry) {
			switch {
			case accepted == nil && e.local == peer && e.remote == me:
				accepted = &peerSocket{uid: e.uid, inodes: []uint64{e.inode}}
			case listener == nil && e.state == tcpListen && e.local.Port() == peer.Port() &&
				(e.local.Addr() == peer.Addr() || e.local.Addr().IsUnspecified()):
				listener = &peerSocket{uid: e.uid, inodes: []uint64{e.inode}}
			}
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return peerSocket{}, false, err
		}
	}
	switch {
	case accepted != nil:
		if listener != nil {
			accepted.inodes = append(accepted.inodes, listener.inodes...)
		}
		return *accepted, true, nil
	case listener != nil:
		return *listener, true, nil
	}
	return peerSocket{}, false, fmt.Errorf("no socket of %s in %s", peer, strings.Join(procNetTCP, " or "))
}

// tcpEntry is one line of /proc/net/tcp.
type tcpEntry struct {
	local, remote netip.AddrPort // IPv4-mapped addresses unmapped
	state         int
	uid           int
	inode         uint64
}

// scanTCP calls fn with every entry of the table at path.
func scanTCP(path string, fn func(tcpEntry)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		var e tcpEntry
		var ok1, ok2 bool
		e.local, ok1 = parseProcAddr(fields[1])
		e.remote, ok2 = parseProcAddr(fields[2])
		st, err1 := strconv.ParseUint(fields[3], 16, 8)
		uid, err2 := strconv.Atoi(fields[7])
		inode, err3 := strconv.ParseUint(fields[9], 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		e.state, e.uid, e.inode = int(st), uid, inode
		fn(e)
	}
	return sc.Err()
}

// parseProcAddr parses an address of /proc/net/tcp: the address as 32-bit
// words in hex, each in the machine's byte order, then ':' and the port.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// pid returns a process that holds one of s's sockets, or 0 if none can
// be seen: another user's descriptors are visible only to root.
func (s peerSocket) pid() int {
	want := make(map[string]bool, len(s.inodes))
	for _, ino := range s.inodes {
		want[fmt.Sprintf("socket:[%d]", ino)] = true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, dir := range procs {
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && want[l] {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
				return pid
			}
		}
	}
	return 0
}
