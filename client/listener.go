package client

// This file checks who holds the daemon's loopback port before the
// client sends anything on a connection to it. Loopback is not a trust
// boundary on a shared host: while serve is down, any local user may bind
// 127.0.0.1:7420, and a CLI that sent its credential there would hand
// the daemon's admin credential (and any secret in a request) to that
// user. The kernel knows who created each socket; the client asks it.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrForeignListener is what a *ListenerError satisfies (errors.Is).
var ErrForeignListener = errors.New("the daemon's address is held by another user")

// ListenerError is returned (wrapped) by every request when the loopback
// address dialled is held by a socket of a uid the client does not trust:
// nothing was sent on that connection.
type ListenerError struct {
	Addr string // the address dialled, e.g. "127.0.0.1:7420"
	UID  int    // the uid that owns the listening socket
	PID  int    // a process holding the socket; 0 if not visible to this user
	Want int    // the uid the daemon was expected to run as
}

func (e *ListenerError) Error() string {
	who := fmt.Sprintf("uid %d", e.UID)
	if e.PID > 0 {
		who += fmt.Sprintf(" (pid %d)", e.PID)
	}
	me := os.Geteuid()
	if e.Want == me {
		return fmt.Sprintf("%s is held by %s, not by you (uid %d): the daemon is not running or another user took its port; refusing to send it anything "+
			"(if the daemon runs as uid %d on purpose, say so with --daemon-uid %d or SWITCHBOARD_DAEMON_UID)", e.Addr, who, me, e.UID, e.UID)
	}
	return fmt.Sprintf("%s is held by %s, not by the daemon's uid %d (--daemon-uid): the daemon is not running or another user took its port; refusing to send it anything",
		e.Addr, who, e.Want)
}

func (e *ListenerError) Is(target error) bool { return target == ErrForeignListener }

// trustedListener reports whether a socket owned by uid may receive what
// the client sends when the daemon should run as want: want's, or root's,
// since root can read this user's credential file anyway.
func trustedListener(uid, want int) bool { return uid == want || uid == 0 }

// checkedDial returns dial with the listener check: a connection whose
// other end is a loopback address is closed, and an error returned, unless
// the socket at that end belongs to want (or root). Elsewhere the check
// does not apply (the owner of a remote socket cannot be known; an address
// that is not loopback is trusted through TLS or by choice).
func checkedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), want int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		remote, ok := conn.RemoteAddr().(*net.TCPAddr)
		if !ok || !remote.IP.IsLoopback() {
			return conn, nil
		}
		owner, known, err := socketOwner(conn)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("finding who holds %s: %w", remote, err)
		}
		if known && !trustedListener(owner.uid, want) {
			conn.Close()
			return nil, &ListenerError{Addr: remote.String(), UID: owner.uid, PID: owner.pid(), Want: want}
		}
		return conn, nil
	}
}
