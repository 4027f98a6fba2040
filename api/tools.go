package api

import "encoding/json"

// ToolView is a tool as the API lists it.
type ToolView struct {
	// Server is the name of the server that offers the tool.
	Server string `json:"server"`
	// Name is the tool's name on that server.
	Name string `json:"name"`
	// Address is "server/tool", the name POST /api/v1/call takes.
	Address string `json:"address"`
	// Description is the tool's description as the server gave it.
	Description string `json:"description"`
	// InputSchema is the JSON schema of the tool's arguments, as the
	// server gave it.
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolList is the answer of GET /api/v1/tools (the tools of every
// connected server) and GET /api/v1/servers/{name}/tools (one server's).
type ToolList struct {
	Tools []ToolView `json:"tools"`
}

// ToolHit is a tool GET /api/v1/tools?search=Q found.
type ToolHit struct {
	// Server is the name of the server that offers the tool, Name its
	// name there.
	Server string `json:"server"`
	Name   string `json:"name"`
	// Description is the tool's description as the server gave it.
	Description string `json:"description"`
	// Score is how well the tool matches the query: higher is better,
	// comparable only within one answer.
	Score float64 `json:"score"`
}

// ToolHits is the answer of GET /api/v1/tools?search=Q[&limit=N], best
// first.
type ToolHits struct {
	Tools []ToolHit `json:"tools"`
}
