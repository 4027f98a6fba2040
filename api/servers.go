package api

import sb "github.com/switchboard-mcp/switchboard"

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
// lines kept for a stdio server, oldest first; none for a remote or a
// disabled server.
type LogLines struct {
	Lines []string `json:"lines"`
}
