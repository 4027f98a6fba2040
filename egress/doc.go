// Package egress is what Switchboard's requests to remote servers may do
// and what they carry: the addresses they may be dialed to (policy.go),
// the origin a server's configured headers stay on (origin.go), the
// Switchboard-Via and Switchboard-Reach headers that keep Switchboard from
// serving itself (loop.go), and the connection of an event stream
// (streamconn.go). Its errors, BlockedAddressError and RedirectError, are
// returned before anything is sent.
package egress
