package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// This file reads a legacy SSE stream one event at a time, with a bound.
// The go-sdk's SSE client holds an event whole whatever its size (up to
// its own cap, which then ends the stream); here an event's data is held
// up to Options.Limit, and past it the event is discarded as it comes,
// keeping only its first and last bytes: enough to tell what the message
// was (a server request, or the answer to which request) and fail that
// request alone, since one stream carries the answers to every request.

const (
	// sseReadBuffer is the reader's buffer: a line longer than it comes
	// in chunks.
	sseReadBuffer = 32 << 10
	// keptEventBuffer is the largest data buffer kept between events: an
	// idle connection does not keep the largest message it ever read.
	keptEventBuffer = 64 << 10
	// maxEventName bounds what is kept of an event's "event:" field.
	maxEventName = 64
	// peekHead and peekTail are how much of an oversized message's data is
	// kept to tell what it is: its first bytes (to parse) and its last
	// ones (for an id written after the result, as the TypeScript SDK
	// writes it).
	peekHead = 4 << 10
	peekTail = 512
)

// sseEvent is one event of the stream. Data is the reader's until the next
// call of next, unless the caller takes it (sseReader.take).
type sseEvent struct {
	name []byte
	data []byte
	// over is set for an event whose data passed the limit; data is then
	// empty and head and tail hold its first and last bytes, size its
	// length.
	over       bool
	head, tail []byte
	size       int
}

// isMessage reports whether the event carries a JSON-RPC message: its
// name is "message" or it has none (the SSE default).
func (e *sseEvent) isMessage() bool {
	return len(e.name) == 0 || string(e.name) == "message"
}

// sseReader reads events off a stream with a bound on each one's data.
type sseReader struct {
	br    *bufio.Reader
	limit int // 0: none
	ev    sseEvent
	lines int // data lines of the current event
}

func newSSEReader(r io.Reader, limit int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, sseReadBuffer), limit: limit}
}

// take gives the current event's data to the caller, who may keep it.
func (r *sseReader) take() []byte {
	d := r.ev.data
	r.ev.data = nil
	return d
}

// next returns the next event that has data (or had, if it was over the
// limit). An event cut off by the end of the stream is not returned, as
// the SSE specification says; the stream's error is.
func (r *sseReader) next() (*sseEvent, error) {
	r.reset()
	for {
		done, err := r.line()
		if err != nil {
			return nil, err
		}
		if done && (r.ev.over || r.lines > 0) {
			return &r.ev, nil
		}
		if done {
			r.reset() // an event without data is not dispatched
		}
	}
}

func (r *sseReader) reset() {
	data := r.ev.data
	if cap(data) > keptEventBuffer {
		data = nil
	}
	r.ev = sseEvent{name: r.ev.name[:0], data: data[:0]}
	r.lines = 0
}

// field is what a line of the stream sets.
type field uint8

const (
	fieldOther field = iota // a comment, id, retry or unknown field: ignored
	fieldData
	fieldEvent
)

// line reads one line and applies it to the current event, reporting
// whether it was the blank line that ends the event. A line longer than
// the buffer is read in chunks, none held beyond what the event keeps.
func (r *sseReader) line() (blank bool, err error) {
	var f field
	for first := true; ; first = false {
		chunk, err := r.br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !full && (len(chunk) == 0 || err != io.EOF) {
			return false, err
		}
		if !full {
			chunk = bytes.TrimSuffix(chunk, []byte("\n"))
			chunk = bytes.TrimSuffix(chunk, []byte("\r"))
		}
		if first {
			if len(chunk) == 0 && !full {
				return true, nil
			}
			var value []byte
			f, value = parseField(chunk)
			switch f {
			case fieldData:
				if r.lines > 0 {
					r.appendData([]byte("\n"))
				}
				r.lines++
				r.appendData(value)
			case fieldEvent:
				r.ev.name = append(r.ev.name[:0], value[:min(len(value), maxEventName)]...)
			}
		} else if f == fieldData {
			r.appendData(chunk)
		}
		if err == io.EOF {
			return false, err // the last line, without its end: the event is cut
		}
		if !full {
			return false, nil
		}
	}
}

// parseField splits a line's start into its field and value ("data: x":
// data, "x"; one space after the colon is not part of the value).
func parseField(line []byte) (field, []byte) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "data":
		return fieldData, value
	case "event":
		return fieldEvent, value
	}
	return fieldOther, nil
}

// appendData adds p to the current event's data, or, past the limit, to
// what is kept of it.
func (r *sseReader) appendData(p []byte) {
	e := &r.ev
	if !e.over && (r.limit <= 0 || len(e.data)+len(p) <= r.limit) {
		if n := len(e.data) + len(p); n > cap(e.data) && r.limit > 0 {
			// Grown as append grows it, but never past the limit: a
			// message just under it is held in its size, not twice that.
			grown := make([]byte, len(e.data), min(max(2*cap(e.data), n), r.limit))
			copy(grown, e.data)
			e.data = grown
		}
		e.data = append(e.data, p...)
		return
	}
	if !e.over {
		e.over = true
		e.size = len(e.data)
		e.head = append([]byte(nil), e.data[:min(len(e.data), peekHead)]...)
		e.tail = appendTail(nil, e.data)
		e.data = nil // the buffer, up to the limit, is not kept
	}
	if need := peekHead - len(e.head); need > 0 {
		e.head = append(e.head, p[:min(len(p), need)]...)
	}
	e.tail = appendTail(e.tail, p)
	e.size += len(p)
}

// appendTail returns the last peekTail bytes of tail followed by p.
func appendTail(tail, p []byte) []byte {
	if len(p) >= peekTail {
		return append(tail[:0], p[len(p)-peekTail:]...)
	}
	if over := len(tail) + len(p) - peekTail; over > 0 {
		tail = append(tail[:0], tail[over:]...)
	}
	return append(tail, p...)
}

// msgKind is what a message is, as far as the bytes at hand tell.
type msgKind uint8

const (
	kindUnknown  msgKind = iota
	kindResponse         // "result" or "error": an answer to a request
	kindRequest          // "method" or "params": a server request or a notification
)

// peek reads what it can of a JSON-RPC message from its first bytes: its
// kind, and its id if it comes before any nested value (the go-sdk and the
// Python SDK write it before the result). It stops at the first nested
// value, whose end is out of reach.
func peek(head []byte) (kind msgKind, id json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown, nil
	}
	for range 16 { // a JSON-RPC message has four members; a few more are passed over
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return kind, id
		}
		switch key {
		case "result", "error":
			kind = kindResponse
		case "method", "params":
			kind = kindRequest
		}
		v, err := dec.Token()
		if err != nil {
			return kind, id
		}
		switch v := v.(type) {
		case json.Delim:
			return kind, id
		case json.Number:
			if key == "id" {
				id = json.RawMessage(v)
			}
		case string:
			if key == "id" {
				id, _ = json.Marshal(v)
			}
		}
	}
	return kind, id
}

// idFromTail returns the id that ends a message, as the TypeScript SDK
// writes its responses ({"result":{...},"jsonrpc":"2.0","id":5}), read
// backwards from its last bytes: `"id": VALUE }` at the very end, the key
// after a comma, so that it is a member of the outermost object (the last
// brace of valid JSON closes it).
func idFromTail(tail []byte) json.RawMessage {
	i := trimSpaceEnd(tail, len(tail))
	if i == 0 || tail[i-1] != '}' {
		return nil
	}
	end := trimSpaceEnd(tail, i-1)
	if end == 0 {
		return nil
	}
	start := end - 1
	if tail[start] == '"' {
		for start--; start >= 0; start-- {
			if tail[start] != '"' {
				continue
			}
			slashes := 0
			for k := start - 1; k >= 0 && tail[k] == '\\'; k-- {
				slashes++
			}
			if slashes%2 == 0 {
				break
			}
		}
		if start < 0 {
			return nil
		}
	} else {
		for start > 0 && (tail[start-1] == '-' || tail[start-1] >= '0' && tail[start-1] <= '9') {
			start--
		}
	}
	val := tail[start:end]
	j := trimSpaceEnd(tail, start)
	if j == 0 || tail[j-1] != ':' {
		return nil
	}
	j = trimSpaceEnd(tail, j-1)
	if j < len(`"id"`) || string(tail[j-len(`"id"`):j]) != `"id"` {
		return nil
	}
	j = trimSpaceEnd(tail, j-len(`"id"`))
	if j == 0 || tail[j-1] != ',' || !json.Valid(val) {
		return nil
	}
	return json.RawMessage(bytes.Clone(val))
}

// trimSpaceEnd returns the end of b[:i] without its trailing JSON spaces.
func trimSpaceEnd(b []byte, i int) int {
	for i > 0 && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n' || b[i-1] == '\r') {
		i--
	}
	return i
}
