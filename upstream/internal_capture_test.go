package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	segjson "github.com/segmentio/encoding/json"
)

// FuzzTakeResult: what a capture takes from a message is the result of
// the response to the POST's own request, as encoding/json reads it, and
// the stand-in it gives the go-sdk is that response's id with the same
// isError; anything else is left to the go-sdk.
func FuzzTakeResult(f *testing.F) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"result":{"content":[],"isError":true},"jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"isError":true}}}`,
		`{"jsonrpc":"2.0","id":"7","result":{}}`,
		`{"jsonrpc":"2.0","id":8,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":42}`,
		`{"jsonrpc":"2.0","id":7,"result":{"a":1}} trailing`,
		`{"jsonrpc":"2.0","id":7,"result":{"isError":true,"isError":false}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"is\u0045rror":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"ISERROR":true,"isError":"true"}}`,
	} {
		f.Add(msg, "7", 64)
	}
	f.Add(`{"jsonrpc":"2.0","result":{}}`, "", 64) // no id on either side
	// Keys with escapes: a decoder reads them as the keys they spell.
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{},"\u006dethod":"ping"}`, "7", 64)
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{},"\u0065rror":{"code":1,"message":"x"}}`, "7", 64)
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{},"\u0069d":8}`, "7", 64)
	f.Fuzz(func(t *testing.T, msg, own string, max int) {
		out := &rawResult{}
		c := &resultCapture{out: out, max: max}
		standIn, ok := c.take([]byte(msg), []byte(own))
		if !ok {
			if out.Result != nil {
				t.Fatalf("not taken, but the result is %s", out.Result)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("took %s from %q, which encoding/json refuses: %v", out.Result, msg, err)
		}
		if _, has := m["method"]; has {
			t.Fatalf("took the result of a request: %q", msg)
		}
		if _, has := m["error"]; has {
			t.Fatalf("took the result of an error response: %q", msg)
		}
		if !equalJSON(m["id"], []byte(own)) || len(out.Result) > max || !equalJSON(m["result"], out.Result) {
			t.Fatalf("took %s (own id %s, max %d) from %q", out.Result, own, max, msg)
		}
		var res struct {
			IsError any `json:"isError"` // only true is an error
		}
		// Read as the go-sdk reads it: case-sensitive keys, escapes undone.
		if _, err := segjson.Parse(out.Result, &res, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			t.Fatalf("took %s, which is not a result object: %v", out.Result, err)
		}
		var stand struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []any `json:"content"`
				IsError bool  `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(standIn, &stand); err != nil || !equalJSON(stand.ID, []byte(own)) ||
			stand.Result.Content == nil || stand.Result.IsError != (res.IsError == true) {
			t.Fatalf("stand-in %s for %q (isError %v): %v", standIn, msg, res.IsError, err)
		}
	})
}

func equalJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// headID reads the id of a POST's request from its first bytes only: a
// large request's id is found without reading it all, and a body that
// does not start with its id gives none.
func TestHeadIDReadsTheRequestsFirstBytes(t *testing.T) {
	body := func(s string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
	}
	big := `,"method":"tools/call","params":{"arguments":{"text":"` + strings.Repeat("x", 1<<20) + `"}}}`
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":5` + big, "5"},
		{`{"jsonrpc":"2.0","id":"sb-1"` + big, `"sb-1"`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"text":"` + strings.Repeat("x", requestHead) + `"}},"id":5}`, ""},
		{`{"jsonrpc":"2.0","id":{"a":1}}`, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, ""},
		{`not json`, ""},
	} {
		if got := string(headID(body(tc.body))); got != tc.want {
			t.Errorf("headID(%.40q...) = %q, want %q", tc.body, got, tc.want)
		}
	}
	if got := headID(nil); got != nil {
		t.Errorf("headID(nil) = %q", got)
	}
}

// A legacy SSE link's captures take the answer to a call in flight off
// the link's stream by its id, and nothing else: not a server request
// that happens to carry the same id, not an answer once the call is over.
func TestStreamCapturesTakeOnlyAnswersOfCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sc streamCaptures
		ctx, end := context.WithCancel(context.Background())
		out := &rawResult{}
		sc.add(ctx, []byte("7"), &resultCapture{out: out, max: 1 << 10})
		sc.add(ctx, nil, &resultCapture{out: &rawResult{}, max: 1 << 10}) // no id: nothing to register
		if _, ok := sc.take([]byte(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}`)); ok {
			t.Error("took a server request with the call's id")
		}
		if _, ok := sc.take([]byte(`{"jsonrpc":"2.0","id":8,"result":{}}`)); ok {
			t.Error("took another request's answer")
		}
		standIn, ok := sc.take([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`))
		if !ok || string(out.Result) != `{"content":[]}` || !strings.Contains(string(standIn), `"id":7`) {
			t.Errorf("the call's answer: taken %v, result %s, stand-in %s", ok, out.Result, standIn)
		}
		end()
		synctest.Wait() // the AfterFunc that forgets the capture has run
		if _, ok := sc.by["7"]; ok || len(sc.by) != 0 {
			t.Errorf("captures left after their call ended: %v", sc.by)
		}
	})
}
