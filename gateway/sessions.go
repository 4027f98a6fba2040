package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file bounds the downstream Streamable HTTP sessions: each holds
// some 15 KB on the gateway while idle (40,000 held 646 MB), so that,
// unbounded, clients that never DELETE theirs could take any amount of
// memory. Options.MaxSessions caps them all, Options.MaxSessionsPerAddress
// those one principal holds from one client address, and
// Options.MaxSessionsPerPrincipal those of one principal from every
// address, so that one client cannot take every slot: neither an address
// (every local client shares 127.0.0.1, so a toolset token that filled its
// share locked the admin out) nor a credential (which may come from any
// of 127.0.0.0/8).
//
// A session counts from its successful initialize until it ends. A
// request that may create a session (a POST without Mcp-Session-Id) takes
// a slot before the session is made, so that concurrent initializes cannot
// overshoot a cap; the slot is the session's if the request initialized
// it, and is freed with the session otherwise (endpoint.go closes a
// session its first request did not initialize, as the go-sdk's handler
// does). The end of a session frees its slot when it happens: a DELETE
// before it answers 204, the idle timeout when it fires (endpoint.go).
//
// Stdio sessions (`switchboard stdio`, one client) and the stateless
// requests of protocol 2026-07-28 (which leave no session behind) are not
// counted.

// Limits that refuse new sessions, as named in the refusal's JSON-RPC
// error (data.limit) and in the metrics.
const (
	LimitGlobal       = "global"
	LimitPerAddress   = "per_address"
	LimitPerPrincipal = "per_principal"
)

// codeTooManySessions is the JSON-RPC error code of a refused session: a
// server error (the range -32000 to -32099 is the implementation's); the
// HTTP status and data.limit say which limit refused it.
const codeTooManySessions = -32000

// refusalWarnEvery spaces the warnings logged for refused sessions (each
// is counted in SessionStats; a client that retries at once must not fill
// the log).
const refusalWarnEvery = time.Minute

// SessionStats describes the downstream sessions (sb.SessionStats).
type SessionStats = sb.SessionStats

// SessionStats returns the counts of the downstream sessions. It is safe
// for concurrent use.
func (g *Gateway) SessionStats() SessionStats { return g.clients.stats() }

// clientAddr is the address that Options.MaxSessionsPerAddress counts a
// request under: the remote IP of its connection (no header is believed),
// an IPv6 address by its /64, which a single host commonly holds whole.
// It is invalid, and the request exempt from that cap, if the connection
// has no IP address (a Unix socket).
func clientAddr(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// addrString shows a client address as the per-address cap counts it: an
// IPv4 address, or an IPv6 /64; "" for none.
func addrString(p netip.Prefix) string {
	switch {
	case !p.IsValid():
		return ""
	case p.Addr().Is4():
		return p.Addr().String()
	}
	return p.String()
}

// refusal says which cap refused a new session.
type refusal struct {
	limit string // LimitGlobal, LimitPerAddress or LimitPerPrincipal
	max   int
	addr  netip.Prefix
	who   string
	total uint64 // refusals by this limit since New, this one included
	warn  bool   // log it: the first refusal by this limit for refusalWarnEvery
}

// capPrincipal is the principal whose sessions the per-principal cap
// counts a request's under, and the per-address cap apart from other
// principals': the request's (principalName). It is "" for every client
// of a daemon that asks for no credential: they cannot be told apart, and
// only the per-address and global caps apply.
func capPrincipal(r *http.Request) string {
	if who := principalName(r); who != sb.PrincipalAnonymous {
		return who
	}
	return ""
}

// refuse answers a request for a new session that a cap refused: 503 for
// the global cap (the gateway is full, through no fault of this client),
// 429 for the per-address and per-principal caps (this client holds its
// share: it can end some of its sessions), with a JSON-RPC error that
// names the limit and its value.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	status := http.StatusServiceUnavailable
	msg := fmt.Sprintf("switchboard: session refused: the limit of %d live MCP sessions (%s) is reached; try again later", ref.max, ref.limit)
	switch ref.limit {
	case LimitPerAddress:
		status = http.StatusTooManyRequests
		msg = fmt.Sprintf("switchboard: session refused: the limit of %d live MCP sessions per client address (%s) is reached for %s; end unused sessions (DELETE) or try again later",
			ref.max, ref.limit, addrString(ref.addr))
	case LimitPerPrincipal:
		status = http.StatusTooManyRequests
		msg = fmt.Sprintf("switchboard: session refused: the limit of %d live MCP sessions per credential (%s) is reached for %q; end unused sessions (DELETE) or try again later",
			ref.max, ref.limit, ref.who)
	}
	if ref.warn {
		g.log.Warn("refusing new MCP sessions: a limit is reached", "limit", ref.limit, "max", ref.max, "addr", addrString(ref.addr),
			"principal", ref.who, "refused_total", ref.total)
	}
	data, _ := json.Marshal(map[string]any{"limit": ref.limit, "max": ref.max})
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: requestID(r), Error: &jsonrpc.Error{Code: codeTooManySessions, Message: msg, Data: data}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// requestID is the id of the JSON-RPC request in r's body, for the error
// that answers it; the zero ID (null) if there is none to read.
func requestID(r *http.Request) jsonrpc.ID {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return jsonrpc.ID{}
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		return req.ID
	}
	return jsonrpc.ID{}
}
