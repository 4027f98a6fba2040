package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// This file writes the requests Call sends and reads their answers, as
// bytes: a request's params and its answer's result are never decoded.

// idPrefix starts the id of every request Call sends: a namespace the
// go-sdk, which numbers its requests, never uses.
const idPrefix = "sb-"

var idPrefixQuoted = []byte(`"` + idPrefix)

// ids numbers a connection's Call requests.
type ids struct{ next atomic.Uint64 }

func (n *ids) take() string { return idPrefix + strconv.FormatUint(n.next.Add(1), 10) }

// appendRequest appends req as a JSON-RPC request with the string id.
// Params with line breaks (a client's pretty-printed JSON) are compacted,
// so that the request fits on one line of a byte stream.
func appendRequest(b []byte, id string, req *Request) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, id...)
	b = append(b, `","method":`...)
	b = rawjson.AppendString(b, req.Method)
	if len(req.Params) > 0 {
		b = append(b, `,"params":`...)
		b = appendCompact(b, req.Params)
	}
	return append(b, '}')
}

func appendCompact(b []byte, raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...)
	}
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, raw) != nil {
		return append(b, raw...) // not JSON: the server says so
	}
	return buf.Bytes()
}

// cancelled is the notifications/cancelled message for the request id.
func cancelled(id, reason string) []byte {
	b := make([]byte, 0, 96+len(id)+len(reason))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`...)
	b = append(b, id...)
	b = append(b, `","reason":`...)
	b = rawjson.AppendString(b, reason)
	return append(b, "}}"...)
}

// reply is the answer to a Call: its result, as the server wrote it (a
// part of the message), or its error.
type reply struct {
	result json.RawMessage
	err    *jsonrpc.Error
	// empty reports an answer with neither a result nor an error (err
	// then says so).
	empty bool
}

// mayAnswerCall reports whether msg may be the answer to a Call: it names
// an id of Call's namespace. Most messages do not, and are not parsed.
func mayAnswerCall(msg []byte) bool { return rawjson.Contains(msg, idPrefixQuoted) }

// parseReply reads a response whose id is in Call's namespace: its id and
// its result or error. ok is false for anything else (a request, a
// notification, a response to the go-sdk), which is the go-sdk's to read.
func parseReply(msg []byte) (id string, r reply, ok bool) {
	var result, rpcErr []byte
	isRequest, escaped := false, false
	err := rawjson.Members(msg, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 {
			escaped = true // a key spelled with escapes: decoded instead
			return false
		}
		switch string(k) {
		case "id":
			id, _ = rawjson.String(v)
		case "method":
			isRequest = true
		case "result":
			result = v
		case "error":
			rpcErr = v
		}
		return true
	})
	if escaped {
		return parseDecoded(msg)
	}
	if err != nil || isRequest || len(id) <= len(idPrefix) || id[:len(idPrefix)] != idPrefix {
		return "", reply{}, false
	}
	switch {
	case rpcErr != nil && string(rpcErr) != "null": // a null error is none, as encoding/json reads it
		var e jsonrpc.Error
		if json.Unmarshal(rpcErr, &e) != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server answered with a malformed error"}
		}
		r.err = &e
	case result != nil:
		r.result = result
	default:
		r.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server answered with neither a result nor an error"}
		r.empty = true
	}
	return id, r, true
}

// parseDecoded is parseReply for a message whose keys are spelled with
// escapes: decoded as the go-sdk decodes it.
func parseDecoded(msg []byte) (id string, r reply, ok bool) {
	m, err := jsonrpc.DecodeMessage(msg)
	resp, isResp := m.(*jsonrpc.Response)
	if err != nil || !isResp {
		return "", reply{}, false
	}
	id, isString := resp.ID.Raw().(string)
	if !isString || len(id) <= len(idPrefix) || id[:len(idPrefix)] != idPrefix {
		return "", reply{}, false
	}
	if resp.Error != nil {
		var e *jsonrpc.Error
		if !errors.As(resp.Error, &e) {
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
		}
		return id, reply{err: e}, true
	}
	return id, reply{result: resp.Result}, true
}

// outcome turns a reply into what Call returns.
func (r reply) outcome() (json.RawMessage, error) {
	if r.err != nil {
		return nil, &Error{Kind: KindRPC, Sent: true, RPC: r.err}
	}
	return r.result, nil
}

// decodeBatch decodes one message, or a batch of them (which protocols
// before 2025-06-18 allow). A message that is not JSON at all is named by
// encoding/json's error ("invalid character ..."), as the go-sdk's own
// decoder names it.
func decodeBatch(msg []byte) ([]jsonrpc.Message, error) {
	if !json.Valid(msg) {
		var raw json.RawMessage
		return nil, json.Unmarshal(msg, &raw)
	}
	if msg[0] != '[' {
		m, err := jsonrpc.DecodeMessage(msg)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(msg, &raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, errEmptyBatch
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
