package api

import sb "github.com/switchboard-mcp/switchboard"

// ErrorBody is the JSON shape of every error the API answers:
// {"error": {"code": ..., "message": ..., "phase": ...}}.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo describes one failure on the wire. It is also the data of the
// EventError event of a streamed call.
type ErrorInfo struct {
	// Code is the stable, machine-readable name of the failure (see
	// sb.Code); the HTTP status is derived from it.
	Code sb.Code `json:"code"`
	// Message says what went wrong in words a person can act on, secrets
	// removed.
	Message string `json:"message"`
	// Phase, for a failure of a server or a call, is where it failed
	// (spawn, connect, tool_call, ...); empty otherwise.
	Phase sb.Phase `json:"phase,omitempty"`
	// Fields, for an invalid server config (sb.CodeInvalidConfig), names
	// each bad field and what is wrong with it; absent otherwise.
	Fields []FieldError `json:"fields,omitempty"`
}

// FieldError is one invalid field of a server config: its JSON name
// ("command", "retry.delays_ms[1]", "env") and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}
