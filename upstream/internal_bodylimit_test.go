package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchboard-mcp/switchboard/internal/sse"
)

// testLimit is the bound on one message in these tests; "big" is over it.
const testLimit = 200

var big = strings.Repeat("x", 1000)

// closeRecorder is a stream that notes whether it was closed, and how
// much of it was read.
type closeRecorder struct {
	r      io.Reader
	read   int
	closed bool
}

func (c *closeRecorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// events reads every event that comes out of a boundedEvents over stream,
// and the error the stream ended with.
func events(t *testing.T, stream io.Reader, lim bodyLimit) ([]string, error) {
	t.Helper()
	if lim.log == nil {
		lim.log = slog.New(slog.DiscardHandler)
	}
	if lim.requestID == nil {
		lim.requestID = func() json.RawMessage { return nil }
	}
	lim.limit = testLimit
	r := sse.NewReader(newBoundedEvents(io.NopCloser(stream), lim))
	var out []string
	for range 100 {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, string(ev.Data))
	}
	t.Fatal("more than 100 events")
	return nil, nil
}

// tooLargeID returns the id of a tooLargeResponse, or "" if data is not one.
func tooLargeID(data string) string {
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int          `json:"code"`
			Data tooLargeData `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(data), &msg) != nil || msg.Error.Code != codeTooLarge || msg.Error.Data.Marker != tooLargeMarker {
		return ""
	}
	return string(msg.ID)
}

// TestOversizedAnswerOnAStreamIsReplacedForItsRequest: on an event stream
// of its own (a GET: legacy SSE carries every answer in one), an answer
// over the limit becomes an error response to the same request, whether
// its id comes first (the go-sdk, Python) or last (TypeScript), with LF or
// CRLF lines, read in one piece or a byte at a time; the events around it
// pass through untouched.
func TestOversizedAnswerOnAStreamIsReplacedForItsRequest(t *testing.T) {
	before := `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`
	after := `{"jsonrpc":"2.0","id":9,"result":{}}`
	for _, tc := range []struct {
		name, answer, id string
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"result":{"text":"` + big + `"}}`, "7"},
		{"id last", `{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":7}`, "7"},
		{"string id last", `{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":"a\"b"}`, `"a\"b"`},
		{"an error", `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"` + big + `"}}`, "7"},
	} {
		for _, eol := range []string{"\n", "\r\n"} {
			stream := "event: message" + eol + "data: " + before + eol + eol +
				"id: 41" + eol + "data: " + tc.answer + eol + eol +
				"data: " + after + eol + eol
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = strings.NewReader(stream)
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := events(t, r, bodyLimit{})
				if err != nil || len(got) != 3 || got[0] != before || tooLargeID(got[1]) != tc.id || got[2] != after {
					t.Errorf("%s, %q lines, a byte at a time %v: %.300q, %v; want the answer replaced by an error for id %s", tc.name, eol, oneByte, got, err, tc.id)
				}
			}
		}
	}
}

// TestOversizedNotificationIsDroppedAndTheStreamGoesOn: a server request
// or notification over the limit has no request of ours to fail; it is
// dropped and the stream carries on.
func TestOversizedNotificationIsDroppedAndTheStreamGoesOn(t *testing.T) {
	after := `{"jsonrpc":"2.0","id":9,"result":{}}`
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`,
		`{"params":{"data":"` + big + `"},"jsonrpc":"2.0","method":"notifications/message"}`,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"` + big + `"}}`,
	} {
		got, err := events(t, strings.NewReader("data: "+msg+"\n\ndata: "+after+"\n\n"), bodyLimit{})
		if err != nil || len(got) != 1 || got[0] != after {
			t.Errorf("%.60s...: %.300q, %v; want only the next event", msg, got, err)
		}
	}
}

// TestOversizedMessageOfNoKnownKindEndsALegacyStream: on legacy SSE, a
// message over the limit whose kind neither end tells may be the answer a
// call waits for; the connection is given up (onUnknown), as an oversized
// line is over stdio, after the events before it.
func TestOversizedMessageOfNoKnownKindEndsALegacyStream(t *testing.T) {
	unknown := `{"x":{"y":"` + big + `"},"z":1}`
	reset := false
	got, err := events(t, strings.NewReader("data: {}\n\ndata: "+unknown+"\n\ndata: {}\n\n"), bodyLimit{onUnknown: func() { reset = true }})
	if !reset || !errors.Is(err, errTooLarge) || len(got) != 1 {
		t.Fatalf("reset %v, events %.100q, error %v; want the connection reset after the first event", reset, got, err)
	}
	// On a Streamable HTTP stream of its own (no onUnknown), it is dropped.
	got, err = events(t, strings.NewReader("data: {}\n\ndata: "+unknown+"\n\ndata: {}\n\n"), bodyLimit{})
	if err != nil || len(got) != 2 {
		t.Fatalf("events %.100q, error %v; want the other two", got, err)
	}
}

// TestOversizedAnswerEndsAPOSTStreamAtOnce: a POST's stream ends with its
// answer; an oversized one is replaced by an error for the POST's request
// (even when nothing in it tells its id), and the rest of it is not read:
// the stream is closed.
func TestOversizedAnswerEndsAPOSTStreamAtOnce(t *testing.T) {
	rest := strings.Repeat("y", 1<<20)
	for _, answer := range []string{
		`{"jsonrpc":"2.0","id":5,"result":{"text":"` + big + rest + `"}}`,
		`{"result":{"text":"` + big + rest + `"},"jsonrpc":"2.0","id":5}`,
	} {
		body := &closeRecorder{r: strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: " + answer + "\n\n")}
		lim := bodyLimit{limit: testLimit, log: slog.New(slog.DiscardHandler), post: true,
			requestID: func() json.RawMessage { return json.RawMessage("5") }}
		r := sse.NewReader(newBoundedEvents(body, lim))
		first, err1 := r.Next()
		second, err2 := r.Next()
		_, err3 := r.Next()
		if err1 != nil || !strings.Contains(string(first.Data), "progress") || err2 != nil || tooLargeID(string(second.Data)) != "5" ||
			!errors.Is(err3, io.EOF) {
			t.Fatalf("%.40s...: %q %v, %.200q %v, then %v; want the progress, the error for request 5, the end", answer, first.Data, err1, second.Data, err2, err3)
		}
		if !body.closed || body.read > len(rest)/2 {
			t.Errorf("%.40s...: closed %v after reading %d bytes; want it closed without reading the rest", answer, body.closed, body.read)
		}
	}
}

// TestOversizedJSONAnswerIsReplacedForThePOSTsRequest: a POST answered
// with one JSON body over the limit gets an error for its own request in
// its place, whether the size is announced (nothing is read) or not.
func TestOversizedJSONAnswerIsReplacedForThePOSTsRequest(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":"r1","result":{"text":"` + big + `"}}`
	for _, announced := range []int64{-1, int64(len(answer))} {
		body := &closeRecorder{r: strings.NewReader(answer)}
		lim := bodyLimit{limit: testLimit, log: slog.New(slog.DiscardHandler), post: true,
			requestID: func() json.RawMessage { return json.RawMessage(`"r1"`) }}
		got, err := io.ReadAll(newBoundedJSON(body, announced, lim))
		if err != nil || tooLargeID(string(got)) != `"r1"` || !body.closed {
			t.Fatalf("Content-Length %d: %q, %v, closed %v; want the error for request \"r1\"", announced, got, err, body.closed)
		}
		if announced > 0 && body.read != 0 {
			t.Errorf("announced as too large, yet %d bytes were read", body.read)
		}
	}
	small := `{"jsonrpc":"2.0","id":1,"result":{}}`
	got, err := io.ReadAll(newBoundedJSON(io.NopCloser(iotest.HalfReader(strings.NewReader(small))), -1,
		bodyLimit{limit: testLimit, log: slog.New(slog.DiscardHandler), post: true}))
	if err != nil || string(got) != small {
		t.Fatalf("an answer within the limit: %q, %v", got, err)
	}
}
