package testserver

import (
	"bytes"
	"encoding/json"
)

// This file looks at raw JSON-RPC messages before the SDK sees them. Several
// faults (-hang-initialize, -ignore-unknown, HTTP -malformed) must act on a
// message before the SDK has a chance to answer it, and the SDK's receiving
// middleware neither sees the JSON-RPC id nor methods it does not know, so the
// "request"/"notification" events are recorded here too.

// knownMethods is the set of client-to-server methods defined by MCP
// 2025-11-25. -ignore-unknown swallows anything else, which is how a server
// that predates a newer protocol (e.g. server/discover from 2026-07-28)
// behaves at its worst: it never answers.
var knownMethods = map[string]bool{
	"initialize":                       true,
	"ping":                             true,
	"tools/list":                       true,
	"tools/call":                       true,
	"resources/list":                   true,
	"resources/templates/list":         true,
	"resources/read":                   true,
	"resources/subscribe":              true,
	"resources/unsubscribe":            true,
	"prompts/list":                     true,
	"prompts/get":                      true,
	"completion/complete":              true,
	"logging/setLevel":                 true,
	"tasks/get":                        true,
	"tasks/result":                     true,
	"tasks/list":                       true,
	"tasks/cancel":                     true,
	"notifications/initialized":        true,
	"notifications/cancelled":          true,
	"notifications/progress":           true,
	"notifications/roots/list_changed": true,
	"notifications/tasks/status":       true,
}

// wireMessage is the part of a JSON-RPC message the fault layer cares about.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// parseWire decodes a single JSON-RPC message. It returns nil for anything
// that is not a single JSON object (batches, garbage): those are passed to the
// SDK untouched so that it produces its usual errors.
func parseWire(data []byte) *wireMessage {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	var m wireMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil
	}
	return &m
}

// isRequest reports whether m expects a response.
func (m *wireMessage) isRequest() bool {
	return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// requestID renders the id as a plain string: 7 -> "7", "abc" -> "abc".
func (m *wireMessage) requestID() string {
	return idString(m.ID)
}

func idString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

// toolName returns params.name of a tools/call, or "".
func (m *wireMessage) toolName() string {
	if m.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Name
}

// cancelledID returns params.requestId of a notifications/cancelled, or "".
func (m *wireMessage) cancelledID() string {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return idString(p.RequestID)
}

// verdict is what the fault layer decided to do with an incoming message.
type verdict int

const (
	deliver verdict = iota // hand it to the SDK
	swallow                // never deliver it and never answer it
)

// inspect records the wire-level event for m and decides whether the SDK
// gets to see it (stdio; the HTTP front end calls the two halves itself
// because other faults sit between them). session identifies the HTTP
// session, if any.
func (s *server) inspect(m *wireMessage, session string) verdict {
	s.recordWire(m, session)
	if reason := s.swallowReason(m); reason != "" {
		s.recordDropped(m, session, reason)
		return swallow
	}
	return deliver
}

// recordWire records a "request" or "notification" event for m, and
// remembers the id of initialize for -malformed.
func (s *server) recordWire(m *wireMessage, session string) {
	if m == nil || m.Method == "" {
		return // a response to one of our requests, or unparsable
	}
	e := Event{Method: m.Method, Session: session}
	if m.isRequest() {
		e.Event = "request"
		e.RequestID = m.requestID()
		e.Tool = m.toolName()
	} else {
		e.Event = "notification"
		if m.Method == "notifications/cancelled" {
			e.RequestID = m.cancelledID()
		}
	}
	s.events.record(e)
	if m.Method == "initialize" {
		id := string(m.ID)
		s.initID.Store(&id)
	}
}

// swallowReason says why m must never be answered, or "" if it may be
// delivered.
func (s *server) swallowReason(m *wireMessage) string {
	switch {
	case m == nil || m.Method == "":
		return ""
	case s.opts.HangInitialize && m.Method == "initialize":
		return "hang-initialize"
	case s.opts.HangToolsList && m.Method == "tools/list":
		return "hang-tools-list"
	case s.opts.IgnoreUnknown && !knownMethods[m.Method]:
		return "ignore-unknown"
	}
	return ""
}

// recordDropped records that m (nil for a non-JSON-RPC HTTP request) was
// swallowed for reason.
func (s *server) recordDropped(m *wireMessage, session, reason string) {
	e := Event{Event: "dropped", Session: session, Reason: reason}
	if m != nil {
		e.Method = m.Method
		if m.isRequest() {
			e.RequestID = m.requestID()
		}
	}
	s.events.record(e)
	what := "a non-JSON-RPC request"
	if e.Method != "" {
		what = e.Method
		if e.RequestID != "" {
			what += " id=" + e.RequestID
		}
	}
	s.logf("dropped %s: %s", what, reason)
}

// malformedLine is the invalid JSON written by -malformed.
const malformedLine = `{"jsonrpc":"2.0", this is not json`

// isResponseTo reports whether line is a JSON-RPC response whose id equals
// the raw id rawID.
func isResponseTo(line []byte, rawID string) bool {
	if rawID == "" {
		return false
	}
	var r struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(line, &r); err != nil || r.Method != "" {
		return false
	}
	return idString(r.ID) == idString(json.RawMessage(rawID)) && sameIDKind(r.ID, rawID)
}

// sameIDKind distinguishes the id 1 from the id "1": they are different
// JSON-RPC ids even though they render alike.
func sameIDKind(a json.RawMessage, b string) bool {
	quoted := func(s string) bool { return len(s) > 0 && s[0] == '"' }
	return quoted(string(bytes.TrimSpace(a))) == quoted(b)
}
