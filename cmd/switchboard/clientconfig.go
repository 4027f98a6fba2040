package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/store"
)

// clientConfigs are the clients client-config knows, with where each
// keeps its MCP servers.
var clientConfigs = map[string]string{
	"claude":      "Claude Desktop: claude_desktop_config.json (Settings > Developer > Edit Config)",
	"claude-code": "Claude Code: .mcp.json at the project root",
	"cursor":      "Cursor: ~/.cursor/mcp.json, or .cursor/mcp.json in a project",
	"vscode":      "VS Code: .vscode/mcp.json in a workspace, or the user's mcp.json (MCP: Open User Configuration)",
}

func newClientConfigCommand() *cobra.Command {
	var dsn string
	cmd := &cobra.Command{
		Use:       "client-config claude|claude-code|cursor|vscode",
		Short:     "Print the settings an MCP client needs to use Switchboard",
		ValidArgs: []string{"claude", "claude-code", "cursor", "vscode"},
		Long: `client-config prints, on stdout, the JSON an MCP client's config file takes
to reach Switchboard; where it goes is said on stderr. Merge its entry into
the file's existing servers.

cursor, vscode and claude-code reach "switchboard serve" over HTTP at
--addr + "/mcp", with the daemon's credential in an Authorization header:
--token, else SWITCHBOARD_TOKEN, else the credential serve generated for
this user (for a daemon on loopback). The snippet holds that credential:
keep the file private, and out of version control.

claude (Claude Desktop) starts its local servers as commands; a URL is a
"connector" that Anthropic's servers dial, which cannot reach a daemon on
loopback. So it gets "switchboard stdio" on the same database (--db): no
network, no credential, and its own copy of the servers.`,
		Example: `  switchboard client-config vscode > .vscode/mcp.json
  switchboard client-config cursor --addr http://127.0.0.1:8080
  switchboard client-config claude --db sqlite:$HOME/switchboard.db`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			which := args[0]
			var (
				snippet any
				note    string
			)
			if which == "claude" {
				s, err := stdioConfig(dsn)
				if err != nil {
					return err
				}
				snippet = s
				note = "Claude Desktop starts local servers as commands, so this runs \"switchboard stdio\" on " + store.Redact(s.MCPServers["switchboard"].Args[2]) +
					": it needs no daemon and no credential, and runs that database's servers itself"
			} else {
				addr, token, err := daemonFrom(cmd)
				if err != nil {
					return err
				}
				c, err := client.New(addr, "", nil)
				if err != nil {
					return fmt.Errorf("--addr: %w", err)
				}
				c.Close()
				if token == "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: no credential for %s (no --token or SWITCHBOARD_TOKEN, and, for a daemon on loopback, no %s): the snippet sends none, which only a daemon started with --%s accepts\n",
						c.BaseURL(), credentialHint(), insecureNoAuthFlag)
				}
				snippet = httpConfig(which, c.BaseURL()+"/mcp", token)
				if token != "" {
					note = "the snippet holds the daemon's credential: keep the file private and out of version control"
				}
			}
			b, err := json.MarshalIndent(snippet, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			fmt.Fprintf(cmd.ErrOrStderr(), "# for %s\n", clientConfigs[which])
			if note != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "# %s\n", note)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "db", envOr("SWITCHBOARD_DB", defaultDB), "claude: the database switchboard stdio serves (env SWITCHBOARD_DB)")
	addTokenFlag(cmd, false)
	return cmd
}

// httpServer is an HTTP MCP server in a client's config, in the order
// the clients' documentation writes it.
type httpServer struct {
	Type    string            `json:"type,omitempty"` // "http" for VS Code and Claude Code; Cursor infers it from url
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// httpConfig is the config of an HTTP MCP client (cursor, vscode,
// claude-code) with Switchboard at url, sending token if not empty.
func httpConfig(which, url, token string) map[string]map[string]httpServer {
	s := httpServer{URL: url}
	if token != "" {
		s.Headers = map[string]string{"Authorization": "Bearer " + token}
	}
	servers := "mcpServers"
	switch which {
	case "vscode":
		servers, s.Type = "servers", "http"
	case "claude-code":
		s.Type = "http"
	}
	return map[string]map[string]httpServer{servers: {"switchboard": s}}
}

// stdioServer is a command in Claude Desktop's config.
type stdioServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

type stdioClientConfig struct {
	MCPServers map[string]stdioServer `json:"mcpServers"`
}

// stdioConfig is Claude Desktop's config of "switchboard stdio" on dsn:
// this binary by its absolute path and a SQLite path made absolute, since
// the client starts the command from a directory of its own, with a PATH
// of its own.
func stdioConfig(dsn string) (stdioClientConfig, error) {
	self, err := os.Executable()
	if err != nil {
		return stdioClientConfig{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	if path, ok := sqlitePath(dsn); ok && !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return stdioClientConfig{}, err
		}
		dsn = "sqlite:" + abs
	}
	return stdioClientConfig{MCPServers: map[string]stdioServer{"switchboard": {Command: self, Args: []string{"stdio", "--db", dsn}}}}, nil
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
