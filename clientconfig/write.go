package clientconfig

// This file writes the entry a client's config takes to reach
// Switchboard: "switchboard client-config" prints it (or writes a new
// file with it).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Clients are the clients a config is written for, with where each
// keeps its MCP servers.
var Clients = map[string]string{
	"claude":      "Claude Desktop: claude_desktop_config.json (Settings > Developer > Edit Config)",
	"claude-code": "Claude Code: .mcp.json at the project root",
	"cursor":      "Cursor: ~/.cursor/mcp.json, or .cursor/mcp.json in a project",
	"vscode":      "VS Code: .vscode/mcp.json in a workspace, or the user's mcp.json (MCP: Open User Configuration)",
}

// envToken is the environment variable the snippets of Cursor and Claude
// Code read the credential from, as the CLI does (client.envToken).
const envToken = "SWITCHBOARD_TOKEN"

// vscodeInput is the id of the input VS Code asks the credential with.
const vscodeInput = "switchboard-token"

// tokenReference is how each HTTP client's config refers to a secret it
// is given apart from the file: VS Code's input (asked once, kept in its
// secret storage), an environment variable for the others.
var tokenReference = map[string]string{
	"vscode":      "${input:" + vscodeInput + "}",
	"cursor":      "${env:" + envToken + "}",
	"claude-code": "${" + envToken + "}",
}

// HTTPServer is an HTTP MCP server in a client's config, in the order
// the clients' documentation writes it.
type HTTPServer struct {
	Type    string            `json:"type,omitempty"` // "http" for VS Code and Claude Code; Cursor infers it from url
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// HTTPConfig is the config of an HTTP MCP client: VS Code's "inputs" and
// "servers", or the others' "mcpServers".
type HTTPConfig struct {
	Inputs     []VSCodeInput         `json:"inputs,omitempty"`
	Servers    map[string]HTTPServer `json:"servers,omitempty"`
	MCPServers map[string]HTTPServer `json:"mcpServers,omitempty"`
}

// VSCodeInput is an input of VS Code's mcp.json: a value it asks for and
// keeps.
type VSCodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// StdioServer is a command in Claude Desktop's config.
type StdioServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// StdioConfig is Claude Desktop's config of its local servers.
type StdioConfig struct {
	MCPServers map[string]StdioServer `json:"mcpServers"`
}

// EntryName is the name of Switchboard's entry in a client's config:
// "switchboard", or "switchboard-NAME" for a toolset, so that several
// toolsets can sit side by side.
func EntryName(toolset string) string {
	if toolset == "" {
		return "switchboard"
	}
	return "switchboard-" + toolset
}

// HTTPSnippet is the config of the HTTP client which (cursor, vscode,
// claude-code) with Switchboard at baseURL ("/mcp", or the endpoint of
// toolset if not empty), and notes on the credential for the person who
// installs it. token is the credential to send ("": none); embed puts it
// in the snippet itself, as does a toolset (its token is the toolset's,
// not the daemon's), else the snippet refers to it (given: it came with
// the command, not from credentialFile, the daemon's).
func HTTPSnippet(which, baseURL, toolset, token string, embed, given bool, credentialFile string) (HTTPConfig, []string) {
	url := baseURL + "/mcp"
	if toolset != "" {
		url = baseURL + "/toolsets/" + toolset + "/mcp"
	}
	var notes []string
	header := ""
	switch {
	case token == "":
	case embed || toolset != "":
		header = "Bearer " + token
		what := "the daemon's credential (whoever reads it can run any command as the daemon's user)"
		if toolset != "" {
			what = "the token of toolset " + toolset
		}
		notes = append(notes, "the snippet holds "+what+": keep the file private and out of version control")
	default:
		header = "Bearer " + tokenReference[which]
		notes = append(notes, tokenNote(which, given, credentialFile))
	}
	return httpConfig(which, EntryName(toolset), url, header, credentialFile), notes
}

// tokenNote says how to give the client the credential the snippet
// refers to: the daemon's own, or the token the command was given.
func tokenNote(which string, given bool, credentialFile string) string {
	what := "the daemon's credential, the contents of " + credentialFile
	if given {
		what = "the token you passed with --token, --token-file or SWITCHBOARD_TOKEN"
	}
	if which == "vscode" {
		return "the snippet holds no credential: VS Code asks for it when it first starts the server (give it " + what + ") and keeps it in its secret storage"
	}
	if given {
		return fmt.Sprintf("the snippet holds no credential: start the client with %s set to %s", envToken, what)
	}
	return fmt.Sprintf("the snippet holds no credential: start the client with %s set to %s (e.g. %s=\"$(cat %s)\" %s)",
		envToken, what, envToken, credentialFile, map[string]string{"cursor": "cursor", "claude-code": "claude"}[which])
}

// httpConfig is the config of an HTTP MCP client (cursor, vscode,
// claude-code) with Switchboard at url under the entry name, sending
// the Authorization header if it is not empty (VS Code's input
// reference comes with the input).
func httpConfig(which, name, url, authorization, credentialFile string) HTTPConfig {
	s := HTTPServer{URL: url}
	if authorization != "" {
		s.Headers = map[string]string{"Authorization": authorization}
	}
	switch which {
	case "vscode":
		s.Type = "http"
		c := HTTPConfig{Servers: map[string]HTTPServer{name: s}}
		if strings.Contains(authorization, "${input:"+vscodeInput+"}") {
			c.Inputs = []VSCodeInput{{Type: "promptString", ID: vscodeInput, Password: true,
				Description: "Switchboard's credential (the contents of " + credentialFile + ", or a token from switchboard token create)"}}
		}
		return c
	case "claude-code":
		s.Type = "http"
	}
	return HTTPConfig{MCPServers: map[string]HTTPServer{name: s}}
}

// Stdio is Claude Desktop's config of "switchboard stdio" on dsn, given
// in the entry's env (serving toolset only, if not empty): this binary by
// its absolute path and a SQLite path made absolute, since the client
// starts the command from a directory of its own, with a PATH of its own.
// A SQLite database that does not exist is refused (its error names
// client-config's --db).
func Stdio(dsn, toolset string) (StdioConfig, error) {
	self, err := os.Executable()
	if err != nil {
		return StdioConfig{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	if path, ok := sqlitePath(dsn); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return StdioConfig{}, err
		}
		// switchboard stdio would create an empty database there, and the
		// client would see no tools and no error.
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return StdioConfig{}, fmt.Errorf("--db: the database %s does not exist, so the client would see no servers; "+
				"give --db the file your servers are in (the --db of your \"switchboard serve\"; its default is ./switchboard.db in the directory it runs in)", abs)
		}
		dsn = "sqlite:" + abs
	}
	// The DSN goes in the environment: a PostgreSQL DSN may hold a
	// password, and a command line is readable by every local user.
	args := []string{"stdio"}
	if toolset != "" {
		args = append(args, "--toolset", toolset)
	}
	return StdioConfig{MCPServers: map[string]StdioServer{EntryName(toolset): {Command: self, Args: args,
		Env: map[string]string{"SWITCHBOARD_DB": dsn}}}}, nil
}

// sqlitePath returns the file path of a SQLite DSN (sqlite:PATH or a bare
// PATH ending in .db; see store.Open); ok is false for any other DSN.
func sqlitePath(dsn string) (path string, ok bool) {
	dsn = strings.TrimSpace(dsn)
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "sqlite:"):
		path = dsn[len("sqlite:"):]
		if rest, ok := strings.CutPrefix(path, "//"); ok {
			path = rest // sqlite:///abs/path
		}
		return path, path != ""
	case strings.HasSuffix(lower, ".db") && !strings.Contains(dsn, "://"):
		return dsn, true
	}
	return "", false
}

// WriteFile writes b into a new file at path with mode 0600, making its
// directory if it is missing (.vscode in a fresh project, made as the
// client would make it): the snippet may hold a token, and a config file
// in a project directory is read by whoever reads the project. A file
// that exists is left alone: the error is fs.ErrExist.
func WriteFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
