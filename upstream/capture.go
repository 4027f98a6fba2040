package upstream

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// A tool call over HTTP is relayed as bytes too, one layer lower than over
// a byte stream (relay.go): the go-sdk's client still sends it and reads
// its answer, so that everything HTTP asks (the session and protocol
// headers, authorization, the answer's event stream and its resumption,
// the server's requests and notifications on it) stays the go-sdk's. But
// the round-tripper, which holds every message of an answer whole before
// the go-sdk reads it (bodylimit.go), takes the result out of the answer
// to the call's POST and gives the go-sdk a stand-in with no content and
// the same isError. The go-sdk then decodes a few bytes instead of the
// result, and the endpoint writes the server's bytes instead of encoding
// the go-sdk's objects again.
//
// On legacy SSE the answers come on the link's one event stream instead
// (streamCaptures): the result is taken there, by the request's id.
//
// A result the round-tripper does not take goes to the go-sdk whole, and
// the call returns it as always: one over the size cap (checkResult
// measures it as it measures every other), one that is not an object, an
// answer that comes on a resumed stream (a GET), and any answer whose id
// does not plainly match the POST's request.

// resultCapture takes the result of a tool call's answer for out, if it
// is at most max bytes.
type resultCapture struct {
	out *rawResult
	max int
}

// take reads msg, the data of one message of the answer to a POST whose
// request's id is own. If msg is the response to it with a result to
// take, the result goes to c.out, and take returns the message the go-sdk
// reads instead. The answer to a POST without an id (a notification's) is
// left alone without looking at c.out, which the call's own answer may be
// filling on another goroutine.
func (c *resultCapture) take(msg, own []byte) (standIn []byte, ok bool) {
	if len(own) == 0 || c.out.Result != nil {
		return nil, false // one answer per call
	}
	var id, result []byte
	isResponse := false
	err := rawjson.Members(msg, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 {
			// A key with an escape may spell "method", "error" or "id"
			// to a decoder: such a message is left to the go-sdk.
			isResponse = false
			return false
		}
		switch string(k) {
		case "id":
			id = v
		case "result":
			result, isResponse = v, true
		case "method", "error":
			isResponse = false
			return false
		}
		return true
	})
	if err != nil || !isResponse || !bytes.Equal(id, own) {
		return nil, false
	}
	isError, ok := rawOutcome(result, c.max)
	if !ok {
		return nil, false
	}
	c.out.Result = result
	b := make([]byte, 0, 64+len(id))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[]`...)
	if isError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}"...), true
}

// requestHead is how much of a POST's body is read for its request's id:
// the go-sdk writes the id second, after "jsonrpc".
const requestHead = 256

// headID returns the id of the JSON-RPC request that starts the body
// getBody returns (the go-sdk's bodies can be read again), if it is
// within its first requestHead bytes and not null. The answer to the
// request is told by it: the result to take (take), the oversized answer
// to replace (bodylimit.go).
func headID(getBody func() (io.ReadCloser, error)) []byte {
	if getBody == nil {
		return nil
	}
	rc, err := getBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	head := make([]byte, requestHead)
	n, _ := io.ReadFull(rc, head)
	id, ok := rawjson.Get(head[:n], "id")
	if !ok || len(id) == 0 || id[0] == '{' || id[0] == '[' || string(id) == "null" {
		return nil
	}
	return id
}

// streamCaptures are the captures of a legacy SSE link's calls in flight,
// by their request's id: their answers come on the link's one event
// stream, not in their POSTs.
type streamCaptures struct {
	mu sync.Mutex
	by map[string]*resultCapture
}

// add registers c for the request id (none, if id is nil) until ctx, the
// call's, ends.
func (sc *streamCaptures) add(ctx context.Context, id []byte, c *resultCapture) {
	if id == nil {
		return
	}
	key := string(id)
	sc.mu.Lock()
	if sc.by == nil {
		sc.by = make(map[string]*resultCapture)
	}
	sc.by[key] = c
	sc.mu.Unlock()
	context.AfterFunc(ctx, func() {
		sc.mu.Lock()
		if sc.by[key] == c {
			delete(sc.by, key)
		}
		sc.mu.Unlock()
	})
}

// take is the stream's bodyLimit.take: a message that answers a request
// registered here is offered to its capture.
func (sc *streamCaptures) take(msg []byte) ([]byte, bool) {
	sc.mu.Lock()
	n := len(sc.by)
	sc.mu.Unlock()
	if n == 0 {
		return nil, false // no call waits for its result's bytes
	}
	id, ok := rawjson.Get(msg, "id")
	if !ok {
		return nil, false
	}
	sc.mu.Lock()
	c := sc.by[string(id)]
	sc.mu.Unlock()
	if c == nil {
		return nil, false
	}
	return c.take(msg, id)
}
