package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file tells which call a server's request belongs to, on Streamable
// HTTP. A server asks for input (elicitation/create) or a completion
// (sampling/createMessage) on the event stream of the POST that carried the
// call that needs it, but the go-sdk merges every stream into one and hands
// its handlers neither the stream nor the request's id. So the stream is
// read here first: such a request gets the call's token in its _meta
// (callMetaKey), which the handler reads back and removes before anything
// is relayed. Over stdio and legacy SSE no stream says it; see
// serverRequestCall.

// callMetaKey is the _meta key that carries the token of the call a server
// request belongs to. It never leaves the session.
const callMetaKey = "switchboard/call"

// callTagger passes a call's event stream through, tagging the server
// requests in it with the call's token.
type callTagger struct {
	r       *bufio.Reader
	c       io.Closer
	tok     string
	pending []byte // bytes ready for Read
	midLine bool   // passing through a line longer than the buffer
	err     error  // from the stream, returned once pending is drained
}

func newCallTagger(body io.ReadCloser, tok string) *callTagger {
	return &callTagger{r: bufio.NewReaderSize(body, 16<<10), c: body, tok: tok}
}

func (t *callTagger) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		line, err := t.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line is a result, never a request to tag.
			t.pending, t.midLine = line, true
			continue
		}
		if !t.midLine {
			line = t.tag(line)
		}
		t.pending, t.midLine, t.err = line, false, err
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

func (t *callTagger) Close() error { return t.c.Close() }

var (
	elicitMethod = []byte(`"elicitation/create"`)
	sampleMethod = []byte(`"sampling/createMessage"`)
)

// tag returns line, or, if it is the data of a server request that a call
// answers, the same request with the call's token in params._meta.
func (t *callTagger) tag(line []byte) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || (!bytes.Contains(data, elicitMethod) && !bytes.Contains(data, sampleMethod)) {
		return line
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || msg["id"] == nil {
		return line // not a request: nothing to route
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || (method != "elicitation/create" && method != "sampling/createMessage") {
		return line
	}
	var params map[string]json.RawMessage
	if len(msg["params"]) > 0 && json.Unmarshal(msg["params"], &params) != nil {
		return line
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	meta := mcp.Meta{}
	if len(params["_meta"]) > 0 && json.Unmarshal(params["_meta"], &meta) != nil {
		return line
	}
	meta[callMetaKey] = t.tok
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(append([]byte("data: "), out...), '\n')
}

// callToken takes the call token out of a server request's _meta.
func callToken(meta mcp.Meta) (string, bool) {
	tok, ok := meta[callMetaKey].(string)
	delete(meta, callMetaKey)
	return tok, ok
}
