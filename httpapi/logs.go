package httpapi

// This file streams a server's stderr (GET .../logs?follow=true). The
// session keeps its last lines in a ring, without times or a count of the
// lines written, so the stream polls it and finds the new lines as what
// follows the longest overlap with what it saw last; a line is stamped with
// the time it was found. Status events come from the registry's
// subscription, and the lines found before each are sent first, so that a
// process's last lines come before the marker of the next one.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// logQuery reads ?tail=N (0: every line) and ?follow=true.
func logQuery(r *http.Request) (tail int, follow bool, err error) {
	q := r.URL.Query()
	if v := q.Get("tail"); v != "" {
		if tail, err = strconv.Atoi(v); err != nil || tail < 0 {
			return 0, false, fmt.Errorf("%w: tail must be a whole number of lines, not %q", errBadRequest, v)
		}
	}
	if v := q.Get("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			return 0, false, fmt.Errorf("%w: follow must be true or false, not %q", errBadRequest, v)
		}
	}
	return tail, follow, nil
}

// lastN returns the last n lines, or all of them if n is 0.
func lastN(lines []string, n int) []string {
	if n > 0 && len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// newLines returns the lines of cur that were not in prev, two snapshots
// of a ring of lines: what follows the longest suffix of prev that cur
// starts with. A ring that was replaced (a new session) shares nothing,
// so all of cur is new. Lines repeated exactly across a whole ring are
// ambiguous; they are taken as not new.
func newLines(prev, cur []string) []string {
	for s := range len(prev) + 1 {
		if rest := prev[s:]; len(rest) <= len(cur) && slices.Equal(rest, cur[:len(rest)]) {
			return cur[len(rest):]
		}
	}
	return cur // not reached: the empty suffix always matches
}

// followLogs streams a server's log lines and status events.
func (a *handler) followLogs(w http.ResponseWriter, r *http.Request, name string, tail int) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		a.writeError(w, r, errors.New("streaming is not supported by this connection"))
		return
	}
	// Subscribed before the lines are read: no change after them is missed.
	events, cancel := a.reg.Subscribe()
	defer cancel()
	seen, err := a.reg.Logs(name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	for _, l := range lastN(seen, tail) {
		if writeEvent(w, sseEvent{api.EventLog, api.LogLine{Line: l}}) != nil {
			return
		}
	}
	flusher.Flush()

	// sendNew sends the lines written since the last look, read by the
	// time by; false when the client is gone or the server was deleted.
	sendNew := func(by time.Time) bool {
		cur, err := a.reg.Logs(name)
		if err != nil {
			return false
		}
		now := time.Now()
		if by.Before(now) {
			now = by
		}
		for _, l := range newLines(seen, cur) {
			if writeEvent(w, sseEvent{api.EventLog, api.LogLine{Line: l, At: &now}}) != nil {
				return false
			}
		}
		seen = cur
		return true
	}
	poll := time.NewTicker(api.LogPollInterval)
	defer poll.Stop()
	keepAlive := time.NewTicker(eventsKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-poll.C:
			if !sendNew(time.Now()) {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Server != name {
				continue
			}
			// The lines found now were written before the change was
			// received; those of the process a change ended were written
			// before it happened, and are stamped so.
			if !sendNew(ev.At) && ev.Reason != sb.ReasonDeleted {
				return
			}
			if writeEvent(w, sseEvent{api.EventStatus, ev}) != nil || ev.Reason == sb.ReasonDeleted {
				flusher.Flush()
				return
			}
		}
		flusher.Flush()
	}
}
