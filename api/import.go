package api

// ImportRequest is the body of POST /api/v1/import: another MCP client's
// config file, as text (Claude Desktop's claude_desktop_config.json,
// Cursor's or VS Code's mcp.json, VS Code's settings.json; comments and
// trailing commas allowed), read as package clientconfig reads a file it was
// given no path of (${workspaceFolder} and "envFile" cannot be resolved;
// ${env:NAME} comes from the daemon's environment).
type ImportRequest struct {
	Config string `json:"config"`
	// DryRun reports what would be created and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Disabled creates every server disabled.
	Disabled bool `json:"disabled,omitempty"`
}

// ImportReport is the answer of POST /api/v1/import, and what
// "switchboard import --json" prints: every entry of the file, imported,
// skipped or failed. A server whose name is configured already is skipped
// with the reason ReasonExists: an import never replaces a server.
type ImportReport struct {
	// Format is the file's format: "claude-desktop", "cursor",
	// "claude-desktop/cursor" or "vscode".
	Format string `json:"format"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Imported are the names of the servers created (with DryRun: that
	// would be).
	Imported []string `json:"imported"`
	// Skipped are the entries not imported, and why.
	Skipped []ImportSkip `json:"skipped"`
	// Renamed maps an imported name to the entry's name in the file, where
	// the latter broke Switchboard's name rule or was taken in the file.
	Renamed map[string]string `json:"renamed"`
	// Failed are the servers the daemon refused (an invalid config).
	Failed []ImportFailure `json:"failed"`
}

// ImportSkip is an entry of an imported file that was not imported.
type ImportSkip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ReasonExists is the Reason of an entry skipped because a server of its
// name is configured already.
const ReasonExists = "exists"

// ImportFailure is a server of an imported file that the daemon refused.
type ImportFailure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}
