package api

import (
	"encoding/json"
	"time"
)

// AuditList is the answer of GET /api/v1/audit: the entries selected,
// oldest first.
type AuditList struct {
	Entries []AuditEntry `json:"entries"`
}

// AuditEntry is one entry of the audit log. Of tool, resource, prompt and
// request, the one its kind names is set.
type AuditEntry struct {
	// ID orders the entries; GET /api/v1/audit?after=ID lists those
	// after it (switchboard audit -f follows so).
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	Principal string    `json:"principal"`
	Surface   string    `json:"surface"`           // mcp, mcp_server, toolset, api, stdio
	Toolset   string    `json:"toolset,omitempty"` // for surface toolset
	Kind      string    `json:"kind"`              // tool, resource, prompt, task, api
	Server    string    `json:"server,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Resource  string    `json:"resource,omitempty"` // the URI read
	Prompt    string    `json:"prompt,omitempty"`
	Task      string    `json:"task,omitempty"`    // kind task: "tasks/cancel t-1", the server's task id
	Request   string    `json:"request,omitempty"` // kind api: "PUT /api/v1/servers/x"
	// Outcome is "ok" or the failure's code (timeout, tool_error, ...).
	Outcome      string  `json:"outcome"`
	DurationMS   float64 `json:"duration_ms"`
	RequestBytes int64   `json:"request_bytes"`
	ResultBytes  int64   `json:"result_bytes"`
	// ArgsSHA256 is the hex SHA-256 of the arguments (the request body,
	// for kind api) as sent; absent if there were none.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Arguments, masked, for a server whose config keeps them ("audit":
	// {"arguments": true}); absent otherwise.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}
