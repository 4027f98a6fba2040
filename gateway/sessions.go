package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// a slot before it reaches the go-sdk's handler, so that concurrent
// initializes cannot overshoot a cap; the slot is the session's once the
// session is initialized (countSession, a middleware that sees the
// request's context), and is freed when the request ends otherwise. The
// end of a session: a DELETE frees its slot at once (the go-sdk closes the
// session before it answers 204); the idle timeout is noticed by the sweep
// of clients.go, within clientSweep.
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

// admissionKey carries the *admission of a request that may create a
// session into the context of the session's handlers (the go-sdk passes
// the values of the request's context on to the session it makes for it).
type admissionKey struct{}

// admissionState is where a new session's slot is.
type admissionState int32

const (
	pending   admissionState = iota // taken for the request; the session is not initialized
	admitted                        // the session's, until the session ends
	abandoned                       // freed: the request ended without an initialized session
)

// admission is the slot that a request which may create a session has
// taken. Its state is changed under clients.mu, and read without it by
// countSession, which runs on every request of the session.
type admission struct {
	slot  addrWho      // the request's address and principal (principalName)
	state atomic.Int32 // an admissionState
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

// serveNewSession serves a request that may create a session (a POST
// without Mcp-Session-Id) with h, if a slot is free, and refuses it
// otherwise.
func (g *Gateway) serveNewSession(h http.Handler, w http.ResponseWriter, r *http.Request) {
	a, ref := g.clients.reserve(clientAddr(r), capPrincipal(r))
	if ref != nil {
		g.refuse(w, r, ref)
		return
	}
	defer g.clients.settle(a)
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), admissionKey{}, a)))
}

// countSession is the receiving middleware of a mirror's server that gives
// a new session the slot its request took, once the session is
// initialized: by initialize, or by whatever else the go-sdk may accept as
// a session's first request (server/discover with a protocol version in
// _meta). The go-sdk closes a session that is not initialized when its
// first request ends; one that is stays until it is deleted or times out.
func (c *clients) countSession(server *mcp.Server) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			a, ok := ctx.Value(admissionKey{}).(*admission)
			if !ok || admissionState(a.state.Load()) == admitted {
				return res, err // the common case: a later request of a session
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
				c.admit(a, ss, server)
			}
			return res, err
		}
	}
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

// statusWriter records the status of a response that does not stream.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
