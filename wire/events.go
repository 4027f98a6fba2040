package wire

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// This file reads a text/event-stream body one event at a time, each
// bounded: the data of an event over the limit is counted, never held, so a
// server that streams a 300 MB event costs a buffer, not 300 MB.

// event is one server-sent event.
type event struct {
	id    string
	name  string
	retry string
	data  []byte // the event's own copy; nil when oversized
	// oversized reports that data passed the limit and was dropped; head
	// and tail then hold its first and last bytes (peekHead, peekTail),
	// enough to tell what the message was, and size its length.
	oversized  bool
	head, tail []byte
	size       int
	// seenID reports that the event had an id field (possibly empty,
	// which resets the last event id).
	seenID bool
}

// eventBufSize is the size of the buffer a stream is read through; a line
// longer than it is read in pieces.
const eventBufSize = 32 << 10

var eventBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, eventBufSize) }}

// eventReader reads events from a body. limit bounds one event's data
// (0: no bound).
type eventReader struct {
	r      *bufio.Reader
	limit  int
	pooled bool // r is eventBufs'
}

// idleBufSize is the buffer of a stream that lives as long as its
// connection (the standalone GET stream, a legacy SSE stream): an idle
// session holds it for its whole life, so it is small, and a longer line
// is read in pieces. 2,000 idle Streamable HTTP sessions held 64 MiB of
// 32 KiB buffers.
const idleBufSize = 1 << 10

// newIdleEventReader is newEventReader for a stream that lives as long as
// its connection.
func newIdleEventReader(body io.Reader, limit int) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(body, idleBufSize), limit: limit}
}

func newEventReader(body io.Reader, limit int) *eventReader {
	br := eventBufs.Get().(*bufio.Reader)
	br.Reset(body)
	return &eventReader{r: br, limit: limit, pooled: true}
}

// release gives the buffer back; the reader is not used after it.
func (er *eventReader) release() {
	if er.pooled {
		er.r.Reset(nil)
		eventBufs.Put(er.r)
	}
	er.r = nil
}

// next returns the next event, and the read error once the stream has
// ended (io.EOF). An event whose data the stream's end cuts off before its
// blank line is dispatched all the same, as the go-sdk's reader does (a
// server that ends its stream with the answer's last line).
func (er *eventReader) next() (event, error) {
	var ev event
	fields := false // a field line was read since the last dispatch
	hasData := false
	for {
		line, err := er.r.ReadSlice('\n')
		long := err == bufio.ErrBufferFull
		if err == io.EOF && len(line) > 0 {
			err = nil // the last line, without its end: read it, then end
		} else if err == io.EOF && hasData && !ev.oversized {
			return ev, nil // dispatched at the end; the next call says io.EOF
		}
		if err != nil && !long {
			return event{}, err
		}
		if !long {
			line = trimEOL(line)
		}
		if len(line) == 0 {
			if fields {
				return ev, nil
			}
			continue
		}
		fields = true
		if line[0] == ':' { // a comment
			if long {
				if err := er.skipLine(); err != nil {
					return event{}, err
				}
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if hasData {
				er.appendData(&ev, []byte("\n"))
			}
			hasData = true
			er.appendData(&ev, value)
			for long {
				line, err = er.r.ReadSlice('\n')
				long = err == bufio.ErrBufferFull
				if err != nil && !long {
					return event{}, err
				}
				if !long {
					line = trimEOL(line)
				}
				er.appendData(&ev, line)
			}
			continue
		case "id":
			ev.id, ev.seenID = string(value), true
		case "event":
			ev.name = string(bytes.TrimSpace(value)) // as the go-sdk reads it
		case "retry":
			ev.retry = string(value)
		}
		if long { // an over-long line of another field is not kept
			if err := er.skipLine(); err != nil {
				return event{}, err
			}
		}
	}
}

// appendData adds p to ev's data, or, once the data passes the limit,
// drops it, keeping only its ends.
func (er *eventReader) appendData(ev *event, p []byte) {
	if ev.oversized {
		if need := peekHead - len(ev.head); need > 0 {
			ev.head = append(ev.head, p[:min(len(p), need)]...)
		}
		ev.tail = appendTail(ev.tail, p)
		ev.size += len(p)
		return
	}
	if er.limit > 0 && len(ev.data)+len(p) > er.limit {
		ev.oversized, ev.size = true, len(ev.data)
		ev.head = append([]byte(nil), ev.data[:min(len(ev.data), peekHead)]...)
		ev.tail = appendTail(nil, ev.data)
		ev.data = nil // the buffer, up to the limit, is not kept
		er.appendData(ev, p)
		return
	}
	if need := len(ev.data) + len(p); need > cap(ev.data) {
		// Double, but not past the limit: an event dropped at the limit
		// costs about twice the limit.
		grown := max(2*cap(ev.data), need)
		if er.limit > 0 {
			grown = min(grown, er.limit)
		}
		ev.data = append(make([]byte, 0, grown), ev.data...)
	}
	ev.data = append(ev.data, p...)
}

// skipLine reads to the end of the current line.
func (er *eventReader) skipLine() error {
	for {
		_, err := er.r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
