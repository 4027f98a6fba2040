package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// An endpoint serves one MCP endpoint (/mcp and /mcp/{name} together, or
// one toolset's) over Streamable HTTP, and owns the table of its stateful
// sessions. Each session is a go-sdk StreamableServerTransport (exported
// so that users can write their own handler, as its doc says) that the
// mirror's mcp.Server is connected over; the endpoint serves POST, GET and
// DELETE itself:
//
//   - the checks the go-sdk's StreamableHTTPHandler makes (Host for
//     DNS rebinding, Content-Type, Accept, the protocol version header,
//     the body's bound), the session lookup (404), and the session's
//     principal (403: a session belongs to the credential that began it);
//   - the session caps (sessions.go): a slot is taken before a session is
//     made, and freed when the session ends;
//   - the idle timeout, a timer per session paused while any POST of the
//     session is in flight, relayed calls included;
//   - the session's end, known when it happens: a DELETE, the idle timer,
//     a revoked token, Gateway.Close, whatever closes the session's
//     connection (closingTransport).
//
// A tools/call the gateway can answer as bytes (relay.go) is answered by
// the endpoint, as is a client's answer to a request the gateway made
// during such a call (relay_requests.go) and its notifications/cancelled;
// every other message goes to the session's transport, and so to the
// go-sdk's server. Requests of protocol 2026-07-28 without a session are
// stateless (relay_stateless.go): the gateway answers a plain tools/call
// and the Tasks extension's requests (tasks.go), the go-sdk's stateless
// handler the rest.
type endpoint struct {
	g *Gateway
	// mirrorFor is the mirror a new session or a stateless request of r is
	// served by; nil if none.
	mirrorFor func(r *http.Request) *mirror
	// exists fails for a request of an endpoint that names no server or
	// toolset (404).
	exists    func(r *http.Request) error
	stateless http.Handler // the go-sdk's, for what the gateway does not answer itself

	mu       sync.Mutex
	sessions map[string]*session // by Mcp-Session-Id
}

// session is one stateful downstream session of an endpoint.
type session struct {
	id   string
	m    *mirror
	t    *mcp.StreamableServerTransport
	ss   *mcp.ServerSession
	user string  // the go-sdk TokenInfo's user of the request that began it, if any
	slot addrWho // its client's address and principal: only that principal may use it

	mu         sync.Mutex
	busy       int         // POSTs in flight
	idle       *time.Timer // ends the session after the timeout; nil once it is ending
	stopRevoke func() bool // stops watching the token that began it, if it can be revoked
	// calls are the tools/call the gateway answers in flight, to cancel
	// on notifications/cancelled; asks the gateway's requests to the
	// client during them, waiting for their answers. Both by raw JSON-RPC
	// id.
	calls map[string]context.CancelCauseFunc
	asks  map[string]chan *jsonrpc.Response
}

// newEndpoint returns the handler of an endpoint (see endpoint).
func (g *Gateway) newEndpoint(mirrorFor func(*http.Request) *mirror, exists func(*http.Request) error) http.Handler {
	e := &endpoint{g: g, mirrorFor: mirrorFor, exists: exists, sessions: make(map[string]*session)}
	e.stateless = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if m := mirrorFor(r); m != nil {
			return m.server
		}
		return nil
	}, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.NewCrossOriginProtection().Handler(e)
}

// maxBody bounds a POST's body, as the go-sdk's handler bounds it
// (mcp.DefaultMaxRequestBodyBytes).
const maxBody = mcp.DefaultMaxRequestBodyBytes

// newProtocol is the first protocol version that has no sessions
// (SEP-2575): a request of it without a session is stateless.
const newProtocol = "2026-07-28"

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := e.exists(r); err != nil {
		notFound(w, err)
		return
	}
	if !hostAllowed(r) {
		http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
		return
	}
	version := r.Header.Get("Mcp-Protocol-Version")
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" && version >= newProtocol {
		if r.Method == http.MethodPost {
			if m := e.mirrorFor(r); m != nil && (e.g.serveStatelessRelay(w, r, m) || e.g.serveTasks(w, r, m)) {
				return
			}
		}
		e.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), statelessKey{}, true)))
		return
	}
	// [§2.7] of the spec (2025-06-18): a version in the header must be one
	// the server negotiates. The newer ones are refused per request below.
	if version != "" && version < newProtocol && !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(mcp.SupportedProtocolVersions(), ",")), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPost:
		e.servePOST(w, r, id, version)
	case http.MethodGet:
		if _, streamOK := accepts(r); !streamOK {
			http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
			return
		}
		if id == "" {
			http.Error(w, "Bad Request: GET requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		if s := e.lookup(w, r, id); s != nil {
			s.t.ServeHTTP(w, r) // the standalone stream: it does not pause the idle timer
		}
	case http.MethodDelete:
		if id == "" {
			http.Error(w, "Bad Request: DELETE requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		if s := e.lookup(w, r, id); s != nil {
			e.end(s, false) // its slot is free before the 204
			s.ss.Close()
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		// RFC 9110 §15.5.6: 405 responses MUST include Allow header.
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// servePOST serves a POST of a stateful session, id (a new one if "").
func (e *endpoint) servePOST(w http.ResponseWriter, r *http.Request, id, version string) {
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	if jsonOK, streamOK := accepts(r); !jsonOK || !streamOK {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return
	}
	if id == "" {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		e.serveNew(w, r)
		return
	}
	s := e.lookup(w, r, id)
	if s == nil {
		return
	}
	if !s.begin() {
		http.Error(w, "session not found", http.StatusNotFound) // it is ending
		return
	}
	defer s.end(e.g.opts.SessionTimeout)
	body, err := readPOST(w, r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	// The transport, served directly, takes every request for one of
	// 2025-03-26 (the go-sdk's handler tells it the header's version through
	// an unexported context key): what depends on the version is checked
	// here.
	if version >= newProtocol && refuseNewProtocol(w, body, version) {
		return
	}
	if version >= "2025-06-18" && isBatch(body) {
		http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in 2025-06-18 and later (request version: %s)", version), http.StatusBadRequest)
		return
	}
	if len(r.Header.Values("Last-Event-ID")) == 0 && e.g.serveRelay(w, r, s, body) {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.t.ServeHTTP(w, r)
}

// readPOST reads r's body, at most maxBody bytes: in one piece of its
// length when it is known (the relay's common case, which then costs one
// allocation), else through http.MaxBytesReader.
func readPOST(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	switch n := r.ContentLength; {
	case n > maxBody:
		return nil, &http.MaxBytesError{Limit: maxBody}
	case n > 0:
		body := make([]byte, n)
		_, err := io.ReadFull(r.Body, body)
		return body, err
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
}

// serveNew serves a POST without a session, which may make one: within
// the caps, a new session whose first request it is. A session that
// request does not initialize is closed at its end, as the go-sdk's
// handler closes it (go-sdk#578).
func (e *endpoint) serveNew(w http.ResponseWriter, r *http.Request) {
	m := e.mirrorFor(r)
	if m == nil {
		http.Error(w, "no server available", http.StatusBadRequest)
		return
	}
	g := e.g
	slot, ref := g.clients.reserve(clientAddr(r), capPrincipal(r))
	if ref != nil {
		g.refuse(w, r, ref)
		return
	}
	s, err := e.open(r, m, slot)
	if err != nil {
		g.clients.mu.Lock()
		g.clients.free(slot)
		g.clients.mu.Unlock()
		g.log.Error("opening a downstream session", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	s.begin()
	s.t.ServeHTTP(w, r)
	s.end(g.opts.SessionTimeout)
	if s.ss.InitializeParams() == nil {
		e.end(s, false)
		s.ss.Close()
	}
}

// open makes a session of m for r, the request that begins it, holding
// slot, and keeps it until it ends.
func (e *endpoint) open(r *http.Request, m *mirror, slot addrWho) (*session, error) {
	s := &session{id: rand.Text(), m: m, user: tokenUser(r), slot: slot,
		calls: make(map[string]context.CancelCauseFunc), asks: make(map[string]chan *jsonrpc.Response)}
	s.t = &mcp.StreamableServerTransport{SessionID: s.id}
	// r's context, for its values (the principal): the go-sdk detaches
	// the session's handlers from its cancellation.
	ss, err := m.server.Connect(r.Context(), &closingTransport{StreamableServerTransport: s.t, closed: func() { e.closed(s) }}, nil)
	if err != nil {
		return nil, err
	}
	if !e.g.clients.keep(ss, slot) {
		ss.Close()
		return nil, errGatewayClosed
	}
	s.mu.Lock()
	s.ss = ss
	if p, ok := sb.PrincipalFrom(r.Context()); ok && p.Revoked != nil {
		// A revoked token ends the sessions it began: each later request
		// is refused by the API anyway, its DELETE too, and the session
		// would hold its slot and streams until the idle timeout.
		s.stopRevoke = context.AfterFunc(p.Revoked, func() { ss.Close() })
	}
	s.idle = time.AfterFunc(e.g.opts.SessionTimeout, func() {
		e.end(s, true)
		ss.Close()
	})
	s.mu.Unlock()
	e.mu.Lock()
	e.sessions[s.id] = s
	e.mu.Unlock()
	return s, nil
}

// closed ends s, whose connection has closed (whatever closed it), and
// forgets it.
func (e *endpoint) closed(s *session) {
	s.mu.Lock()
	ss, stopRevoke := s.ss, s.stopRevoke
	s.mu.Unlock()
	if ss == nil {
		return // the go-sdk gave up connecting it
	}
	e.end(s, false)
	if stopRevoke != nil {
		stopRevoke()
	}
	e.g.clients.connClosed(ss, e.g.src.ReleaseClient)
}

// closingTransport is a session's transport: the go-sdk's, whose
// connection calls closed once it is closed. The go-sdk closes the
// connection when the session ends, whatever ends it (its own close hook,
// ServerSessionOptions.onClose, is unexported), so the end is known then,
// without a goroutine per session waiting in ServerSession.Wait.
type closingTransport struct {
	*mcp.StreamableServerTransport
	closed func()
}

func (t *closingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.StreamableServerTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &closingConn{Connection: c, closed: t.closed}, nil
}

// closingConn is the connection of a closingTransport.
type closingConn struct {
	mcp.Connection
	once   sync.Once
	closed func()
}

func (c *closingConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(c.closed)
	return err
}

// lookup returns the session id of r, or answers r as the go-sdk's
// handler does: 404 for a session there is not (any more), 403 for one
// that another principal began.
func (e *endpoint) lookup(w http.ResponseWriter, r *http.Request, id string) *session {
	e.mu.Lock()
	s := e.sessions[id]
	e.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	if s.slot.who != capPrincipal(r) || s.user != "" && s.user != tokenUser(r) {
		http.Error(w, "session user mismatch", http.StatusForbidden)
		return nil
	}
	return s
}

// end takes s out of the table, stops its idle timer for good, and frees
// its slot; it may be called more than once. expired says the idle timer
// ended it.
func (e *endpoint) end(s *session, expired bool) {
	s.mu.Lock()
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	e.mu.Lock()
	if e.sessions[s.id] == s {
		delete(e.sessions, s.id)
	}
	e.mu.Unlock()
	e.g.clients.uncount(s.ss, expired)
}

// begin counts a POST of s in flight, which pauses its idle timer; false
// if s is ending.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle == nil {
		return false
	}
	if s.busy == 0 && !s.idle.Stop() {
		return false // the timer has fired: the session is ending
	}
	s.busy++
	return true
}

// end uncounts a POST of s; the last one restarts the idle timer in full.
func (s *session) end(timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy--; s.busy == 0 && s.idle != nil {
		s.idle.Reset(timeout)
	}
}

// tokenUser is the user of the go-sdk's TokenInfo of r, if any: the
// go-sdk's handler binds a session to it.
func tokenUser(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// hostAllowed is the go-sdk's DNS-rebinding check: a request that came in
// on a loopback address must name a loopback host.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return !ok || local == nil || !isLoopback(local.String()) || isLoopback(r.Host)
}

// isLoopback reports whether addr, a host with or without a port, is
// localhost or a loopback IP (as the go-sdk's internal util.IsLoopback).
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// accepts reads r's Accept as the go-sdk does: whether it takes JSON and
// an event stream.
func accepts(r *http.Request) (jsonOK, streamOK bool) {
	for _, value := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// isBatch reports whether body is a JSON array.
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// refuseNewProtocol answers a request of a stateful session that names
// version, a sessionless protocol (SEP-2575), as the go-sdk's stateful
// handler does: a call gets the JSON-RPC error that lists the versions a
// session may take. It reports whether it answered.
func refuseNewProtocol(w http.ResponseWriter, body []byte, version string) bool {
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() || req.Method == "server/discover" {
		return false
	}
	legacy := slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= newProtocol })
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacy, Requested: version})
	resp, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion, Message: fmt.Sprintf("protocol version %q is not supported by this server", version), Data: data}})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(resp)
	return true
}

// countSession is the receiving middleware of a mirror's server that
// counts a kept session as live once it is initialized (sessions.go).
func (c *clients) countSession(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "initialize" && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				c.admit(ss)
			}
		}
		return res, err
	}
}
