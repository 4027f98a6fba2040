package upstream

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// messageRefusals is the layer of a remote link's HTTP client that fails
// a POST whose answer refuses that one message (refusal) instead of
// handing the answer to the go-sdk, which would take some such answers
// for a broken connection and end the link and every call in flight on
// it. It sits above the page recorder, which must see every answer.
type messageRefusals struct {
	base http.RoundTripper
	sse  bool // the link is legacy SSE
}

func (m messageRefusals) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	if err := refusal(resp, m.sse); err != nil {
		return nil, err
	}
	return resp, nil
}

// transientStatus reports whether an HTTP status refuses one request for
// now without saying anything of the connection: the go-sdk's Streamable
// HTTP client's set (its isTransientHTTPStatus, v1.8.0).
func transientStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// messageStatus reports whether an HTTP status refuses the request it
// answers for what that request is (too large, unprocessable), not for
// anything of the connection's. Not 400: some servers answer a session
// they do not know with it (the Python SDK's, and the TypeScript SDK's
// examples), and that must end the link.
func messageStatus(status int) bool {
	switch status {
	case http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return false
}

// errorBodyPeek is how much of a refusal's body is read to find a
// JSON-RPC error in it; an error page is read no further than that.
const errorBodyPeek = 64 << 10

// refusal returns, for an answer to a POST that refuses that one message,
// the go-sdk's jsonrpc2.ErrRejected (refusedMessage) with the status, and
// closes the body; nil for an answer the go-sdk is to read. The go-sdk
// takes for a broken connection, over legacy SSE, every error status, and
// over Streamable HTTP, a message status (messageStatus) with no JSON-RPC
// error in its body: one call too large for the server, or one rate
// limited, would fail every call in flight on the link. The call's send
// record has the status (statusAnswer). Over Streamable HTTP the rest are
// the go-sdk's to read: a transient status it refuses itself, and a
// JSON-RPC error it reports, so the body is read only to find one and
// then given back whole.
func refusal(resp *http.Response, sse bool) error {
	switch {
	case sse && transientStatus(resp.StatusCode):
	case messageStatus(resp.StatusCode):
		if !sse {
			head, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyPeek))
			resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), Closer: resp.Body}
			if msg, err := jsonrpc.DecodeMessage(head); err == nil {
				if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
					return nil
				}
			}
		}
	default:
		return nil
	}
	// A short error page read to its end leaves the connection reusable.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return refusedMessage(fmt.Errorf("the server answered HTTP %s", resp.Status))
}

// peekedBody is a response body whose start was read and put back.
type peekedBody struct {
	io.Reader
	io.Closer
}

// refusedMessage marks err, the failure of one request, as the refusal of
// that message alone: it wraps the go-sdk's jsonrpc2.ErrRejected (matched
// by its code), which its clients report as the request's failure, where
// any other error of a legacy SSE POST breaks the connection.
func refusedMessage(err error) error {
	return fmt.Errorf("%w: %w", err, &jsonrpc.Error{Code: codeRejected, Message: rejectedText})
}
