package api

import (
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// ServerList is the answer of GET /api/v1/servers: every configured
// server, ordered by name, secrets masked as sb.SecretMask.
type ServerList struct {
	Servers []sb.ServerView `json:"servers"`
}

// RestartResponse is the answer (202) of POST
// /api/v1/servers/{name}/restart: the reconnect has begun; the answer does
// not wait for it.
type RestartResponse struct {
	// Status is always StatusRestarting.
	Status string `json:"status"`
}

// StatusRestarting is the Status of a RestartResponse.
const StatusRestarting = "restarting"

// TestResult is the answer of the test routes (POST
// /api/v1/servers/{name}/test and POST /api/v1/test): what a throwaway
// session, one attempt then shut down, found.
type TestResult struct {
	// Runtime is the state the test session reached: status connected
	// with the server's info and tools, or the error with its phase and
	// code.
	Runtime sb.RuntimeInfo `json:"runtime"`
	// Logs are the lines a stdio server wrote to stderr, oldest first.
	Logs []string `json:"logs"`
}

// LogLines is the answer of GET /api/v1/servers/{name}/logs: the stderr
// lines kept for a stdio server, oldest first (the last 500; with
// ?tail=N, the last N of them); none for a remote or a disabled server.
type LogLines struct {
	Lines []string `json:"lines"`
}

// The events of GET /api/v1/servers/{name}/logs?follow=true, a stream of
// server-sent events that lasts until the client goes away or the server
// is deleted: first an EventLog for each line kept (with ?tail=N, the last
// N), then an EventLog for each new line and an EventStatus (an sb.Event
// of this server) for each change of its state. An EventStatus with reason
// "starting" is a new connection attempt: for a stdio server, a new
// process, whose lines follow it.
const EventLog = "log"

// LogLine is the data of an EventLog.
type LogLine struct {
	// Line is one line the server wrote to stderr, secrets masked.
	Line string `json:"line"`
	// At is when the daemon read the line, within LogPollInterval of its
	// writing. It is absent for the lines that were kept before the
	// stream began: when those were written is not recorded.
	At *time.Time `json:"at,omitempty"`
}

// LogPollInterval is how often a log stream looks for new lines, and so
// how far an At may trail the line's writing.
const LogPollInterval = 250 * time.Millisecond
