package switchboard

import "time"

// ServerView is a server as the API shows it: its config with secrets
// masked, its version, and its runtime info. The config's fields are
// flattened into the view's JSON object.
type ServerView struct {
	ServerConfig
	Version   int64       `json:"version"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Runtime   RuntimeInfo `json:"runtime"`
	// Warnings say what of the server the aggregate /mcp does not show,
	// and why (a resource template that overlaps another server's); absent
	// if nothing.
	Warnings []string `json:"warnings,omitempty"`
}
