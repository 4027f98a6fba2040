// Package wire owns Switchboard's MCP connections to upstream servers: one
// connection type per transport (a byte stream for stdio and in-process
// servers, Streamable HTTP, legacy SSE), each an mcp.Connection that the
// go-sdk's client runs its handshake, pings and server requests over, and
// each offering one raw call that keeps a request's result as the bytes the
// server wrote.
//
// The wire is the one place that reads what a server sends. It reads with
// bounds (Options.Limit on one message), and when a request fails it says
// how in an *Error of its own: what kind of failure, the HTTP status, and
// whether any of the request was sent. Nothing above it reads go-sdk error
// text or infers from timing whether a request reached the server.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Conn is one connection to a server.
//
// The go-sdk's client runs over it as over any mcp.Connection (Read,
// Write, Close, SessionID): the handshake, pings, lists, the server's
// requests and notifications, and the client's answers to them. Call sends
// a request around the go-sdk, with an id of the connection's own, and
// returns its result as bytes; messages about it (progress, the server's
// requests) reach Options.OnMessage and the go-sdk as every other message
// does.
type Conn interface {
	mcp.Connection

	// Call sends req and waits for its answer: the result object as the
	// server wrote it, or an error. Every failure the connection can name
	// is an *Error; a ctx that ends first returns ctx's error, after the
	// server has been told with notifications/cancelled (when the request
	// was sent).
	Call(ctx context.Context, req *Request) (json.RawMessage, error)

	// Done is closed when the connection has ended, on its own or by
	// Close; Err then tells why (an *Error, or nil after Close).
	Done() <-chan struct{}
	Err() error
}

// Request is a request sent by Conn.Call.
type Request struct {
	// Method is the JSON-RPC method, such as "tools/call".
	Method string
	// Params is the params object as JSON, sent as is; nil for none.
	Params json.RawMessage
	// Name is what the request is about, for the Mcp-Name header of the
	// 2026-07-28 protocol over HTTP: a tool's name (tools/call), a
	// prompt's (prompts/get), a resource's URI (resources/read). Empty for
	// other methods.
	Name string
	// Header holds extra HTTP headers for this request (the 2026-07-28
	// protocol's parameter headers); ignored on a byte stream.
	Header http.Header
	// Tag, if set, marks the server's requests that arrive on this
	// request's own stream (Streamable HTTP answers a request on an event
	// stream of its own): their params' _meta gets MetaTag: Tag, so that
	// whoever answers them knows which request they belong to. On a
	// transport with one stream for everything (stdio, legacy SSE) it
	// cannot be told, and nothing is marked.
	Tag string
}

// MetaTag is the _meta key of Request.Tag in a server request.
const MetaTag = "switchboard/call"

// TagOf returns the Tag a server request was marked with, if any, and
// removes it from meta, so that the request goes on as the server sent it.
func TagOf(meta map[string]any) (string, bool) {
	tag, ok := meta[MetaTag].(string)
	delete(meta, MetaTag)
	return tag, ok
}

// tagParams returns params with _meta[MetaTag] set to tag.
func tagParams(params json.RawMessage, tag string) json.RawMessage {
	var p map[string]json.RawMessage
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return params // not an object: the go-sdk refuses it as it is
	}
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	var meta map[string]json.RawMessage
	if m, ok := p["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return params
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[MetaTag], _ = json.Marshal(tag)
	p["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// Options configures a connection; the zero value is usable.
type Options struct {
	// Limit bounds one message the server sends, in bytes (0: no bound).
	// A message over it is never held: the request it answers fails with
	// KindTooLarge, and on a transport where it cannot be told which
	// request it answered, the connection ends with KindTooLarge.
	Limit int
	// OnMessage, if set, sees every message the server sends, whole and
	// undecoded, on the goroutine that read it, before anything else is
	// done with it: a progress notification reaches it before the result
	// that follows it is handed to its caller. It must not block or keep
	// msg.
	OnMessage func(msg []byte)
	// OnEnd, if set, is called once when the connection has ended (Done
	// is closed), on a goroutine of its own: whoever watches the
	// connection needs none waiting for it.
	OnEnd func()
	// Logger receives what the connection drops (an oversized
	// notification, say); nil discards it.
	Logger *slog.Logger
}

func (o *Options) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Kind says what went wrong with a request or a connection.
type Kind uint8

const (
	// KindClosed: the connection ended (or was closed) before the answer
	// came. Error.Sent says whether the request had been sent.
	KindClosed Kind = iota + 1
	// KindRefused: the server's address refused the connection (nothing
	// listens there any more); nothing was sent.
	KindRefused
	// KindStatus: the server answered the request with an HTTP error
	// status (Error.Status) and no JSON-RPC answer.
	KindStatus
	// KindSessionMissing: the server does not know the connection's
	// session (HTTP 404 on Streamable HTTP); the request did not run.
	KindSessionMissing
	// KindTooLarge: the answer was over Options.Limit and was dropped.
	KindTooLarge
	// KindRPC: the server answered with a JSON-RPC error (Error.RPC).
	KindRPC
	// KindProtocol: what the server sent is not an MCP answer (a web
	// page, a body of another content type, malformed JSON-RPC).
	KindProtocol
	// KindTransport: the HTTP client failed the request for another
	// reason, which Err holds as the client gave it (a dial error, an
	// address the egress policy blocks, a redirect refused, a TLS
	// failure); Sent says whether any of it was written.
	KindTransport
)

var kindNames = [...]string{
	KindClosed:         "connection closed",
	KindRefused:        "connection refused",
	KindStatus:         "HTTP error status",
	KindSessionMissing: "session missing",
	KindTooLarge:       "message too large",
	KindRPC:            "JSON-RPC error",
	KindProtocol:       "protocol error",
	KindTransport:      "HTTP request failed",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("wire.Kind(%d)", k)
}

// Error is a failure of a request or of a connection, as the wire knows it.
type Error struct {
	Kind Kind
	// Status is the HTTP status of the answer, if there was one.
	Status int
	// Sent reports whether any of the request was written to the server.
	// A request not sent provably did not run; one sent may have, unless
	// Kind says the server refused it (KindStatus with a status that
	// refuses the message, KindSessionMissing).
	Sent bool
	// RPC is the server's JSON-RPC error, for KindRPC.
	RPC *jsonrpc.Error
	// Limit is the bound that was passed, for KindTooLarge.
	Limit int
	// Page reports that the answer was a web page (HTML): not MCP at all,
	// so the URL is most likely a web site's rather than a broken server's.
	Page bool
	// Err is the underlying error, if any (a dial error, the read error
	// that ended the connection).
	Err error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindStatus:
		return fmt.Sprintf("the server answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	case KindSessionMissing:
		return "the server does not know the session (HTTP 404)"
	case KindTooLarge:
		return fmt.Sprintf("the server sent a message over the %d-byte limit", e.Limit)
	case KindRPC:
		if e.RPC != nil {
			return e.RPC.Error() // the server's words, as the go-sdk reports them
		}
	}
	if e.Err != nil {
		return e.Kind.String() + ": " + e.Err.Error()
	}
	return e.Kind.String()
}

func (e *Error) Unwrap() error {
	if e.Kind == KindRPC && e.RPC != nil {
		return e.RPC
	}
	return e.Err
}

// Is lets errors.Is(err, mcp.ErrConnectionClosed) hold for a connection
// that closed, as the go-sdk's callers test it.
func (e *Error) Is(target error) bool {
	return target == mcp.ErrConnectionClosed && (e.Kind == KindClosed || e.Kind == KindRefused)
}

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var we *Error
	ok := errors.As(err, &we)
	return we, ok
}

// Transport adapts a connection made in advance to the mcp.Transport that
// mcp.Client.Connect takes: Connect returns C.
type Transport struct{ C Conn }

func (t Transport) Connect(context.Context) (mcp.Connection, error) { return t.C, nil }

// isWebPage reports whether contentType is that of a web page. An MCP
// server answers with JSON or an event stream, never HTML.
func isWebPage(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// rejected marks the failure of a go-sdk message's Write as that
// message's alone (Streamable HTTP and SSE alike): the go-sdk's jsonrpc2 ends the connection on a Write
// error unless it carries the "rejected by transport" code.
type rejected struct{ err *Error }

var rejectedCode = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

func (r rejected) Error() string   { return r.err.Error() }
func (r rejected) Unwrap() []error { return []error{r.err, rejectedCode} }
