// Package sse reads and writes server-sent events, the text/event-stream
// format the HTTP API streams calls and status events in
// (https://html.spec.whatwg.org/multipage/server-sent-events.html). It
// knows the format only: which events a stream carries is package api's.
package sse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	// Name is the event's "event:" field, "message" if it had none.
	Name string
	// Data is its "data:" lines joined with "\n".
	Data []byte
}

// Write writes one event whose data is a single line (such as compact
// JSON). The caller flushes.
func Write(w io.Writer, name string, data []byte) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	return err
}

// Reader reads events from a stream.
type Reader struct {
	r *bufio.Reader
}

// NewReader returns a Reader of r. Lines may be of any length.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next event. Comments and events without data are
// skipped; an event cut off by the end of the stream is returned if it
// has data. At the end of the stream Next returns io.EOF; a read error is
// returned as is.
func (s *Reader) Next() (Event, error) {
	var (
		ev  Event
		has bool
	)
	for {
		line, err := s.r.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			if has && errors.Is(err, io.EOF) {
				return ev.named(), nil
			}
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if has {
				return ev.named(), nil
			}
			ev = Event{}
			if err != nil {
				return Event{}, err
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "": // a comment
		case "event":
			ev.Name = value
		case "data":
			if has {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			has = true
		}
		if err != nil { // the last line had no newline
			if has {
				return ev.named(), nil
			}
			return Event{}, err
		}
	}
}

func (ev Event) named() Event {
	if ev.Name == "" {
		ev.Name = "message"
	}
	return ev
}
