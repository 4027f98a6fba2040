package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestEventReaderKeepsTheEndsOfAnOversizedEvent(t *testing.T) {
	head := `{"jsonrpc":"2.0","id":"sb-9","result":{"text":"`
	tail := `"},"id":"sb-9"}`
	data := head + strings.Repeat("y", 200<<10) + tail // lines longer than the reader's buffer
	r := newEventReader(strings.NewReader("data: "+data+"\n\ndata: {\"small\":1}\n\n"), 64<<10)
	defer r.release()
	ev, err := r.next()
	if err != nil || !ev.oversized || ev.size != len(data) || len(ev.data) != 0 {
		t.Fatalf("next() = oversized %v, size %d (want %d), %d bytes held, %v", ev.oversized, ev.size, len(data), len(ev.data), err)
	}
	if !bytes.HasPrefix(ev.head, []byte(head)) || len(ev.head) != peekHead || !bytes.HasSuffix(ev.tail, []byte(tail)) || len(ev.tail) != peekTail {
		t.Fatalf("kept head %d bytes, tail %d bytes: %q ... %q", len(ev.head), len(ev.tail), ev.head[:20], ev.tail)
	}
	if ev, err := r.next(); err != nil || string(ev.data) != `{"small":1}` {
		t.Fatalf("the event after it: %+v, %v", ev, err)
	}
}

func TestPeekAndIDFromTail(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		kind msgKind
		id   string // from the head, else the tail
	}{
		{`{"jsonrpc":"2.0","id":5,"result":{"content":[`, kindResponse, "5"},
		{`{"jsonrpc":"2.0","id":"sb-1","error":{"code":1`, kindResponse, `"sb-1"`},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{`, kindRequest, ""},
		{`{"result":{"content":[]},"jsonrpc":"2.0","id":12}`, kindResponse, "12"},
		{`{"result":{"x":"a\"b"},"jsonrpc":"2.0","id":"q\"}" }`, kindResponse, `"q\"}"`},
		{`{"result":{"inner":{"id":3}}}`, kindResponse, ""}, // a nested id is not the message's
		{`{"result":{"x":"\"id\":3}"}}`, kindResponse, ""},  // nor one in a string
		{`xxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, kindUnknown, ""},
	} {
		kind, id := peek([]byte(tc.msg))
		if id == nil {
			id = idFromTail([]byte(tc.msg))
		}
		if kind != tc.kind || string(id) != tc.id {
			t.Errorf("%s: kind %d, id %s; want %d, %s", tc.msg, kind, id, tc.kind, tc.id)
		}
	}
}
