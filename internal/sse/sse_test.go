package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestReaderReadsEventsCommentsAndATail(t *testing.T) {
	in := ": comment\n\nevent: progress\ndata: {\"progress\":1}\n\n" +
		"data: line1\r\ndata: line2\r\n\r\n" +
		"event: nodata\n\n" +
		"event: result\ndata:{\"x\":1}\n\nevent: tail\ndata: no newline"
	r := NewReader(strings.NewReader(in))
	for _, want := range []struct{ name, data string }{
		{"progress", `{"progress":1}`},
		{"message", "line1\nline2"},
		{"result", `{"x":1}`},
		{"tail", "no newline"},
	} {
		ev, err := r.Next()
		if err != nil || ev.Name != want.name || string(ev.Data) != want.data {
			t.Errorf("Next() = %q, %q, %v; want %q, %q", ev.Name, ev.Data, err, want.name, want.data)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next() at the end: %v, want EOF", err)
	}
}

func TestReaderReadsLongLines(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	r := NewReader(strings.NewReader("event: big\ndata: " + long + "\n\n"))
	if ev, err := r.Next(); err != nil || ev.Name != "big" || string(ev.Data) != long {
		t.Fatalf("Next() = %q, %d bytes, %v", ev.Name, len(ev.Data), err)
	}
}

func TestWriteIsReadBack(t *testing.T) {
	var b bytes.Buffer
	Write(&b, "result", []byte(`{"a":1}`))
	Write(&b, "error", []byte(`{"code":"timeout"}`))
	if b.String() != "event: result\ndata: {\"a\":1}\n\nevent: error\ndata: {\"code\":\"timeout\"}\n\n" {
		t.Fatalf("written %q", b.String())
	}
	r := NewReader(&b)
	for _, want := range []string{"result", "error"} {
		if ev, err := r.Next(); err != nil || ev.Name != want {
			t.Fatalf("Next() = %+v, %v; want %s", ev, err, want)
		}
	}
}
