package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
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
	var dsn, toolset string
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
network, no credential, and its own copy of the servers.

--toolset NAME points the client at one toolset instead of every server:
/toolsets/NAME/mcp, or "switchboard stdio --toolset NAME" for claude. Over
HTTP it needs a token of that toolset (--token or SWITCHBOARD_TOKEN), made
with "switchboard token create AGENT --scope toolset:NAME": the daemon's
own credential reaches everything, which is what a toolset is there to
prevent, so it is not put into such a snippet.`,
		Example: `  switchboard client-config vscode > .vscode/mcp.json
  switchboard client-config cursor --addr http://127.0.0.1:8080
  switchboard client-config claude --db sqlite:$HOME/switchboard.db
  switchboard client-config claude-code --toolset coder --token "$(switchboard token create coder-bot --scope toolset:coder -o json | jq -r .token)"`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			which := args[0]
			var (
				snippet any
				note    string
			)
			if toolset != "" && !sb.IsName(toolset) {
				return fmt.Errorf("--toolset %q is not a toolset name (lowercase letters, digits and '-')", toolset)
			}
			if which == "claude" {
				s, err := stdioConfig(dsn, toolset)
				if err != nil {
					return err
				}
				snippet = s
				note = "Claude Desktop starts local servers as commands, so this runs \"switchboard stdio\" on " + store.Redact(s.MCPServers[entryName(toolset)].Args[2]) +
					": it needs no daemon and no credential, and runs that database's servers itself"
			} else {
				addr, token, err := daemonFrom(cmd)
				if err != nil {
					return err
				}
				if toolset != "" && !tokenGiven(cmd) {
					return fmt.Errorf("--toolset %s: pass a token of that toolset with --token (make one with: switchboard token create AGENT --scope toolset:%s); "+
						"the daemon's own credential reaches every server, which a toolset is there to prevent", toolset, toolset)
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
				url := c.BaseURL() + "/mcp"
				if toolset != "" {
					url = c.BaseURL() + "/toolsets/" + toolset + "/mcp"
				}
				snippet = httpConfig(which, entryName(toolset), url, token)
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
	cmd.Flags().StringVar(&toolset, "toolset", "", "point the client at this toolset only (over HTTP, with a token of it: --token)")
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

// tokenGiven reports whether the command was given a token (--token or
// SWITCHBOARD_TOKEN), not left to find the daemon's own credential.
func tokenGiven(cmd *cobra.Command) bool {
	t, _ := cmd.Flags().GetString("token")
	return t != "" || os.Getenv(client.EnvToken) != ""
}

// entryName is the name of Switchboard's entry in a client's config:
// "switchboard", or "switchboard-NAME" for a toolset, so that several
// toolsets can sit side by side.
func entryName(toolset string) string {
	if toolset == "" {
		return "switchboard"
	}
	return "switchboard-" + toolset
}

// httpConfig is the config of an HTTP MCP client (cursor, vscode,
// claude-code) with Switchboard at url under the entry name, sending
// token if not empty.
func httpConfig(which, name, url, token string) map[string]map[string]httpServer {
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
	return map[string]map[string]httpServer{servers: {name: s}}
}

// stdioServer is a command in Claude Desktop's config.
type stdioServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

type stdioClientConfig struct {
	MCPServers map[string]stdioServer `json:"mcpServers"`
}

// stdioConfig is Claude Desktop's config of "switchboard stdio" on dsn
// (serving toolset only, if not empty): this binary by its absolute path
// and a SQLite path made absolute, since the client starts the command
// from a directory of its own, with a PATH of its own.
func stdioConfig(dsn, toolset string) (stdioClientConfig, error) {
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
	args := []string{"stdio", "--db", dsn}
	if toolset != "" {
		args = append(args, "--toolset", toolset)
	}
	return stdioClientConfig{MCPServers: map[string]stdioServer{entryName(toolset): {Command: self, Args: args}}}, nil
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
