package testserver

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Event is one line of the events file written with -events. The server
// writes it and the harness ([ReadEvents], [WaitEvent]) reads it back, so the
// same type serves both ends and the JSON field names are the contract.
//
// Event kinds (the Event field):
//
//	start         the server started (Transport set)
//	child         -spawn-child started a grandchild; PID is the CHILD's pid
//	request       a JSON-RPC request arrived on the wire (Method, RequestID,
//	              Tool for tools/call); recorded before any fault is applied,
//	              so requests the server then swallows are recorded too
//	notification  a JSON-RPC notification arrived (Method; for
//	              notifications/cancelled, RequestID is the cancelled request)
//	dropped       an incoming message was deliberately swallowed (Method,
//	              RequestID, Reason: "hang-initialize", "ignore-unknown",
//	              "blackhole")
//	initialize    the SDK handled initialize (ProtocolVersion requested)
//	call          a tools/call reached the tool dispatcher (Tool; Traceparent
//	              and TraceparentHeader if the request carried them)
//	cancelled     a tool handler observed its context being cancelled (Tool,
//	              Reason)
//	drop          HTTP sessions were forgotten (Reason: "drop-after", "admin")
//	admin         /admin/blackhole or /admin/heal was called (Reason says which)
//	exit          the server is about to exit deliberately (Code, Reason)
//
// PID is the writing server's pid on every event except "child".
type Event struct {
	Event           string    `json:"event"`
	Time            time.Time `json:"time"`
	PID             int       `json:"pid"`
	Transport       string    `json:"transport,omitempty"`
	Method          string    `json:"method,omitempty"`
	Tool            string    `json:"tool,omitempty"`
	RequestID       string    `json:"request_id,omitempty"`
	Session         string    `json:"session,omitempty"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	Code            int       `json:"code,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	// On a call: the W3C traceparent of the request's params._meta, and
	// of its HTTP header (HTTP transports).
	Traceparent       string `json:"traceparent,omitempty"`
	TraceparentHeader string `json:"traceparent_header,omitempty"`
}

// eventLog appends events to the -events file. A nil *eventLog discards
// everything, so callers never need to check whether -events was given.
type eventLog struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

func openEventLog(path string) (*eventLog, error) {
	if path == "" {
		return nil, nil
	}
	// O_APPEND makes each write land at the current end of file even when
	// several server processes (e.g. a restarted server) share one file; as
	// long as each line goes out in a single write, lines never interleave.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening events file: %w", err)
	}
	return &eventLog{f: f, pid: os.Getpid()}, nil
}

// record stamps e with the time and (unless already set) the pid, and
// appends it as one JSON line. Errors are ignored: the events file is a test
// aid and must never change how the server behaves.
func (l *eventLog) record(e Event) {
	if l == nil {
		return
	}
	e.Time = time.Now()
	if e.PID == 0 {
		e.PID = l.pid
	}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(line)
}

func (l *eventLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.f.Close()
}
