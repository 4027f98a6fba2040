package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestEventReader: events as the event-stream format defines them (data
// lines joined, CRLF, comments, fields without a space, lines longer than
// the buffer), each bounded: one over the limit is marked and holds
// nothing, and the stream goes on after it.
func TestEventReader(t *testing.T) {
	long := strings.Repeat("x", 3*eventBufSize+17)
	stream := ": a comment\n" +
		"event: prime\nid: 1\n\n" +
		"data: {\"a\":1}\r\nid:2\r\nretry: 10\r\n\r\n" +
		"data: line one\ndata: line two\n\n" +
		"data: " + long + "\n\n" +
		"data: " + long + long + "\n\n" + // over the limit
		": " + long + "\n" + // a long comment
		"data:tail\n\n" +
		"data: cut short by the end"
	er := newEventReader(strings.NewReader(stream), 4*eventBufSize)
	defer er.release()
	type want struct {
		name, id, retry, data string
		oversized             bool
	}
	for i, w := range []want{
		{name: "prime", id: "1"},
		{id: "2", retry: "10", data: `{"a":1}`},
		{data: "line one\nline two"},
		{data: long},
		{oversized: true},
		{data: "tail"},
		{data: "cut short by the end"}, // dispatched at the end, as the go-sdk's reader does
	} {
		ev, err := er.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.name != w.name || ev.id != w.id || ev.retry != w.retry || string(ev.data) != w.data || ev.oversized != w.oversized {
			t.Fatalf("event %d: got name %q id %q retry %q oversized %v data of %d bytes, want %+v",
				i, ev.name, ev.id, ev.retry, ev.oversized, len(ev.data), w)
		}
	}
	if _, err := er.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
}
