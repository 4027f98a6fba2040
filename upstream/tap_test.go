package upstream

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// chunkReader returns its data in pieces of the given sizes.
type chunkReader struct {
	data  string
	sizes []int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n, r.sizes = min(r.sizes[0], n), r.sizes[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

func tapAll(t *testing.T, data string, sizes []int, sse bool) []string {
	t.Helper()
	var got []string
	tap := &lineTap{r: &chunkReader{data: data, sizes: sizes}, fn: func(m []byte) { got = append(got, string(m)) }, sse: sse}
	out, err := io.ReadAll(tap)
	if err != nil || string(out) != data {
		t.Fatalf("the tap changed the stream: %q, %v", out, err)
	}
	return got
}

func TestLineTapSeesWholeLinesAcrossReads(t *testing.T) {
	data := "{\"a\":1}\n{\"b\":2}\r\n{\"c\":3}\n"
	for _, sizes := range [][]int{nil, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 9, 2}} {
		got := tapAll(t, data, sizes, false)
		if want := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}; !slices.Equal(got, want) {
			t.Errorf("sizes %v: lines %q, want %q", sizes, got, want)
		}
	}
}

func TestLineTapPassesLongLinesUnexamined(t *testing.T) {
	long := strings.Repeat("x", 3*maxTapLine)
	got := tapAll(t, long+"\n{\"ok\":1}\n", []int{1000, 70000, 70000, 70000}, false)
	if !slices.Equal(got, []string{`{"ok":1}`}) {
		t.Fatalf("lines %d, want only the short one", len(got))
	}
}

func TestLineTapReadsServerSentEvents(t *testing.T) {
	data := "event: message\nid: 1\ndata: {\"a\":1}\n\n: comment\ndata: {\"b\":\ndata: 2}\n\ndata:{\"c\":3}\r\n\r\n"
	got := tapAll(t, data, []int{5, 7, 11, 3}, true)
	if want := []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}
