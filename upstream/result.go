package upstream

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// Result is a tool call's result as the server wrote it. It stays bytes
// until someone asks for it decoded: the aggregated endpoint writes Raw to
// its client as it is, and only callers that look inside pay for Decode.
type Result struct {
	// Raw is the result object, exactly as the server sent it.
	Raw json.RawMessage
	// IsError is the result's isError: the tool ran and failed.
	IsError bool

	once sync.Once
	dec  *mcp.CallToolResult
	err  error
}

// NewResult returns the result whose bytes are raw.
func NewResult(raw json.RawMessage) (*Result, error) {
	isError, err := resultIsError(raw)
	if err != nil {
		return nil, err
	}
	return &Result{Raw: raw, IsError: isError}, nil
}

// ResultOf returns res as a Result, encoded once.
func ResultOf(res *mcp.CallToolResult) (*Result, error) {
	raw, err := res.MarshalJSON()
	if err != nil {
		return nil, err
	}
	r := &Result{Raw: raw, IsError: res.IsError}
	r.once.Do(func() { r.dec = res })
	return r, nil
}

// Decode returns the result as the go-sdk's type, decoded once (and only
// once, however many callers ask).
func (r *Result) Decode() (*mcp.CallToolResult, error) {
	r.once.Do(func() {
		var res mcp.CallToolResult
		if r.err = json.Unmarshal(r.Raw, &res); r.err == nil {
			r.dec = &res
		}
	})
	return r.dec, r.err
}

// MustDecode is Decode for a result known to decode (one NewResult or
// ResultOf made and the size cap passed); it panics otherwise.
func (r *Result) MustDecode() *mcp.CallToolResult {
	res, err := r.Decode()
	if err != nil {
		panic(err)
	}
	return res
}

var (
	isErrorKey    = []byte(`"isError"`)
	unicodeEscape = []byte(`\u`)
)

// resultIsError reads the isError member of a result object as the
// go-sdk's decoder does: the key matched exactly once unescaped, the last
// one winning. It checks that raw is a JSON object.
func resultIsError(raw []byte) (bool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		// Decoding says what is wrong with it.
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return false, err
		}
		return res.IsError, nil
	}
	// A result that does not name isError anywhere, plainly or with a
	// letter escaped (\uXXXX, the only escape a letter has), is not an
	// error, and need not be walked (the go-sdk omits a false isError).
	if !rawjson.Contains(raw, isErrorKey) && !bytes.Contains(raw, unicodeEscape) {
		return false, nil
	}
	isError := false
	err := rawjson.Members(raw, func(k, v []byte) bool {
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
