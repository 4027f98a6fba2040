package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// A relayed call moves a tool call's bytes instead of go-sdk objects: the
// request is written from the caller's raw arguments, and the result is
// handed back as the server wrote it, never decoded into an
// mcp.CallToolResult and encoded again. Everything else about the call is
// CallTool's: timeouts, progress, cancellation, retries, the typed errors
// and the result size cap. Links over a byte stream (stdio, Options.Dial)
// relay the whole call; over HTTP the go-sdk sends the call and the result
// is taken from its answer as bytes (capture.go). For protocols from
// 2026-07-28 on over HTTP, the call goes through the go-sdk and the caller
// gets the result as an object, as always.

// RawResult receives the result of a call made with WithRawResult.
type RawResult struct {
	// Result is the result object as the server sent it; nil if the call
	// was not relayed (the result is then the one CallTool returns). It is
	// the call's only when CallTool succeeded or returned a *ToolError, and
	// may be read only then: over HTTP, an answer that comes as the call's
	// limit ends it can still be writing it after CallTool returned.
	Result json.RawMessage
}

type rawResultKey struct{}

// WithRawResult asks CallTool, for calls made with the returned context, to
// relay the call if the link can and to put the result's bytes in the
// returned RawResult. CallTool then returns a result that carries only
// IsError (for the outcome and the metrics); the caller reads the result
// from RawResult.Result, or from what CallTool returned if that is nil.
func WithRawResult(ctx context.Context) (context.Context, *RawResult) {
	out := &RawResult{}
	return context.WithValue(ctx, rawResultKey{}, out), out
}

func rawResultFrom(ctx context.Context) *RawResult {
	out, _ := ctx.Value(rawResultKey{}).(*RawResult)
	return out
}

// relayedCalls counts the calls relayed as bytes, process-wide: the tests
// read it to know that the relay, not the go-sdk, carried their calls.
var relayedCalls atomic.Int64

// RelayedCalls reports how many tool calls have been relayed as bytes.
func RelayedCalls() int64 { return relayedCalls.Load() }

// relayCall sends a call of the tool name with the raw arguments and
// meta on the link's byte stream and waits for the reply. A result within
// the size cap goes to out as bytes, and the returned result carries only
// IsError; one over it is decoded, so that checkResult measures it as it
// measures every other.
func (s *Session) relayCall(ctx context.Context, l *link, name string, raw json.RawMessage, meta callMeta, out *RawResult) (*mcp.CallToolResult, error) {
	args := compactArgs(raw)
	reply, err := l.frames.call(ctx, func(id string) []byte {
		b := make([]byte, 0, 160+len(name)+len(args))
		b = append(b, `{"jsonrpc":"2.0","id":"`...)
		b = append(b, id...)
		b = append(b, `","method":"tools/call","params":{"name":`...)
		b = rawjson.AppendString(b, name)
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
		if !meta.empty() {
			b = append(b, `,"_meta":`...)
			b = meta.appendJSON(b)
		}
		return append(b, "}}\n"...)
	})
	if err != nil {
		return nil, err
	}
	if reply.err != nil {
		return nil, reply.err
	}
	relayedCalls.Add(1)
	isError, ok := rawOutcome(reply.result, s.opts.MaxResultBytes)
	if !ok {
		var res mcp.CallToolResult
		if err := json.Unmarshal(reply.result, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
	out.Result = reply.result
	return &mcp.CallToolResult{IsError: isError}, nil
}

// rawOutcome reads what a relayed result needs read: whether it is a tool
// error. It is not ok for a result to decode instead: one over max bytes
// (checkResult measures it as it measures every other), or one that is
// not an object (the decoder says what is wrong with it). The result was
// validated as it was read (parseReply, resultCapture.take).
func rawOutcome(result []byte, max int) (isError, ok bool) {
	if len(result) > max || len(result) == 0 || result[0] != '{' {
		return false, false
	}
	// A result that does not name isError anywhere, plainly or with a
	// letter escaped (\uXXXX, the only escape a letter has), is not an
	// error, and need not be walked again (the go-sdk omits a false
	// isError).
	if !bytes.Contains(result, isErrorKey) && !bytes.Contains(result, unicodeEscape) {
		return false, true
	}
	isError, err := resultIsError(result)
	return isError, err == nil
}

var (
	isErrorKey    = []byte(`"isError"`)
	unicodeEscape = []byte(`\u`)
)

// resultIsError reads the isError member of a result object as the
// go-sdk's decoder does: the key matched exactly once unescaped, the last
// one winning.
func resultIsError(result []byte) (bool, error) {
	isError := false
	err := rawjson.Members(result, func(k, v []byte) bool {
		key := string(k)
		if bytes.IndexByte(k, '\\') >= 0 {
			_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key) // a valid string: Members checked it
		}
		if key == "isError" {
			isError = string(v) == "true"
		}
		return true
	})
	return isError, err
}

// compactArgs makes raw arguments fit on one line of the stream: only a
// client's pretty-printed JSON has line breaks, so only that is compacted.
func compactArgs(raw json.RawMessage) json.RawMessage {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw // normalizeArgs checked it: cannot happen
	}
	return b.Bytes()
}
