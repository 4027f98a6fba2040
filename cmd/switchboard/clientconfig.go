package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	var (
		dsn, toolset, write string
		embed               bool
	)
	cmd := &cobra.Command{
		Use:       "client-config claude|claude-code|cursor|vscode",
		Short:     "Print the settings an MCP client needs to use Switchboard",
		ValidArgs: []string{"claude", "claude-code", "cursor", "vscode"},
		Long: `client-config prints, on stdout, the JSON an MCP client's config file takes
to reach Switchboard (or writes it to a new file, of mode 0600, with
--write); where it goes is said on stderr. Merge its entry into the file's
existing servers.

cursor, vscode and claude-code reach "switchboard serve" over HTTP at
--addr + "/mcp", with the daemon's credential in an Authorization header.
The snippet does not hold the credential, which lets whoever reads it run
any command as the daemon's user, but refers to it: VS Code asks for it
once (an input of type promptString, kept in its secret storage), Cursor
and Claude Code read it from SWITCHBOARD_TOKEN in their environment
(${env:SWITCHBOARD_TOKEN}, ${SWITCHBOARD_TOKEN}). What to give them is the
credential serve generated for this user (for a daemon on loopback), else
--token or SWITCHBOARD_TOKEN. --embed-token puts the credential itself in
the snippet instead: keep such a file private and out of version control.

claude (Claude Desktop) starts its local servers as commands; a URL is a
"connector" that Anthropic's servers dial, which cannot reach a daemon on
loopback. So it gets "switchboard stdio" on the same database (--db, given
in the entry's env, not on its command line, where every local user could
read a password in it): no network, no credential, and its own copy of the
servers.

--toolset NAME points the client at one toolset instead of every server:
/toolsets/NAME/mcp, or "switchboard stdio --toolset NAME" for claude. Over
HTTP it needs a token of that toolset (--token or SWITCHBOARD_TOKEN), made
with "switchboard token create AGENT --scope toolset:NAME", which the
snippet holds: the daemon's own credential reaches everything, which is
what a toolset is there to prevent, so it is refused here.`,
		Example: `  switchboard client-config vscode --write .vscode/mcp.json
  switchboard client-config cursor --addr http://127.0.0.1:8080
  switchboard client-config claude --db sqlite:$HOME/switchboard.db
  SWITCHBOARD_TOKEN="$(switchboard token create coder-bot --scope toolset:coder -o json | jq -r .token)" switchboard client-config claude-code --toolset coder`,
		Args: clientArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			which := args[0]
			var (
				snippet any
				notes   []string
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
				notes = append(notes, "Claude Desktop starts local servers as commands, so this runs \"switchboard stdio\" on "+store.Redact(s.MCPServers[entryName(toolset)].Env["SWITCHBOARD_DB"])+
					": it needs no daemon and no credential, and runs that database's servers itself")
			} else {
				addr, token, err := daemonFrom(cmd)
				if err != nil {
					return err
				}
				if toolset != "" && !tokenGiven(cmd) {
					return fmt.Errorf("--toolset %s: pass a token of that toolset with --token or SWITCHBOARD_TOKEN (make one with: switchboard token create AGENT --scope toolset:%s); "+
						"the daemon's own credential reaches every server, which a toolset is there to prevent", toolset, toolset)
				}
				if own, _ := client.CredentialFor(addr); toolset != "" && own != "" && token == own {
					return fmt.Errorf("--toolset %s: the token given is the daemon's own credential, which reaches every server; pass a token of that toolset (switchboard token create AGENT --scope toolset:%s)", toolset, toolset)
				}
				c, err := client.New(addr, "", nil)
				if err != nil {
					return fmt.Errorf("--addr: %w", err)
				}
				c.Close()
				url := c.BaseURL() + "/mcp"
				if toolset != "" {
					url = c.BaseURL() + "/toolsets/" + toolset + "/mcp"
				}
				header := ""
				switch {
				case token == "":
					fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: no credential for %s (no --token or SWITCHBOARD_TOKEN, and, for a daemon on loopback, no %s): the snippet sends none, which only a daemon started with --%s accepts\n",
						c.BaseURL(), credentialHint(), insecureNoAuthFlag)
				case embed || toolset != "":
					header = "Bearer " + token
					what := "the daemon's credential (whoever reads it can run any command as the daemon's user)"
					if toolset != "" {
						what = "the token of toolset " + toolset
					}
					notes = append(notes, "the snippet holds "+what+": keep the file private and out of version control")
				default:
					header = "Bearer " + tokenReference[which]
					notes = append(notes, tokenNote(which, tokenGiven(cmd)))
				}
				snippet = httpConfig(which, entryName(toolset), url, header)
			}
			b, err := json.MarshalIndent(snippet, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if write != "" {
				if err := writePrivate(write, b); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "# wrote %s (mode 0600)\n", write)
			} else {
				cmd.OutOrStdout().Write(b)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "# for %s\n", clientConfigs[which])
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "# %s\n", n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", envOr("SWITCHBOARD_DB", defaultDB), "claude: the database switchboard stdio serves (env SWITCHBOARD_DB)")
	f.StringVar(&toolset, "toolset", "", "point the client at this toolset only (over HTTP, with a token of it: --token or SWITCHBOARD_TOKEN)")
	f.BoolVar(&embed, "embed-token", false, "put the credential itself in the snippet, not a reference to it: whoever reads the file can then run any command as the daemon's user")
	f.StringVar(&write, "write", "", "write the snippet to this new file, created with mode 0600 (refused if it exists), instead of stdout")
	addTokenFlag(cmd, false)
	return cmd
}

// vscodeInput is the id of the input VS Code asks the credential with.
const vscodeInput = "switchboard-token"

// tokenReference is how each HTTP client's config refers to a secret it
// is given apart from the file: VS Code's input (asked once, kept in its
// secret storage), an environment variable for the others.
var tokenReference = map[string]string{
	"vscode":      "${input:" + vscodeInput + "}",
	"cursor":      "${env:" + client.EnvToken + "}",
	"claude-code": "${" + client.EnvToken + "}",
}

// tokenNote says how to give the client the credential the snippet
// refers to: the daemon's own, or the token the command was given.
func tokenNote(which string, given bool) string {
	what := "the daemon's credential, the contents of " + credentialHint()
	if given {
		what = "the token you passed with --token, --token-file or SWITCHBOARD_TOKEN"
	}
	if which == "vscode" {
		return "the snippet holds no credential: VS Code asks for it when it first starts the server (give it " + what + ") and keeps it in its secret storage"
	}
	if given {
		return fmt.Sprintf("the snippet holds no credential: start the client with %s set to %s", client.EnvToken, what)
	}
	return fmt.Sprintf("the snippet holds no credential: start the client with %s set to %s (e.g. %s=\"$(cat %s)\" %s)",
		client.EnvToken, what, client.EnvToken, credentialHint(), map[string]string{"cursor": "cursor", "claude-code": "claude"}[which])
}

// writePrivate writes b into a new file at path with mode 0600: the
// snippet may hold a token, and a config file in a project directory is
// read by whoever reads the project.
func writePrivate(path string, b []byte) error {
	// The client's directory (.vscode in a fresh project) may not exist
	// yet: made as the client would make it.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("--write %s: the file exists; merge the snippet into it by hand (print it without --write)", path)
	}
	if err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("--write: %w", err)
	}
	return nil
}

// httpServer is an HTTP MCP server in a client's config, in the order
// the clients' documentation writes it.
type httpServer struct {
	Type    string            `json:"type,omitempty"` // "http" for VS Code and Claude Code; Cursor infers it from url
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// httpClientConfig is the config of an HTTP MCP client: VS Code's
// "inputs" and "servers", or the others' "mcpServers".
type httpClientConfig struct {
	Inputs     []vscodeInputSpec     `json:"inputs,omitempty"`
	Servers    map[string]httpServer `json:"servers,omitempty"`
	MCPServers map[string]httpServer `json:"mcpServers,omitempty"`
}

// vscodeInputSpec is an input of VS Code's mcp.json: a value it asks for
// and keeps.
type vscodeInputSpec struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// tokenGiven reports whether the command was given a token (--token,
// --token-file or SWITCHBOARD_TOKEN), not left to find the daemon's own credential.
func tokenGiven(cmd *cobra.Command) bool {
	t, _ := cmd.Flags().GetString("token")
	file, _ := cmd.Flags().GetString("token-file")
	return t != "" || file != "" || os.Getenv(client.EnvToken) != ""
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
// the Authorization header if it is not empty (VS Code's input
// reference comes with the input).
func httpConfig(which, name, url, authorization string) httpClientConfig {
	s := httpServer{URL: url}
	if authorization != "" {
		s.Headers = map[string]string{"Authorization": authorization}
	}
	switch which {
	case "vscode":
		s.Type = "http"
		c := httpClientConfig{Servers: map[string]httpServer{name: s}}
		if strings.Contains(authorization, "${input:"+vscodeInput+"}") {
			c.Inputs = []vscodeInputSpec{{Type: "promptString", ID: vscodeInput, Password: true,
				Description: "Switchboard's credential (the contents of " + credentialHint() + ", or a token from switchboard token create)"}}
		}
		return c
	case "claude-code":
		s.Type = "http"
	}
	return httpClientConfig{MCPServers: map[string]httpServer{name: s}}
}

// stdioServer is a command in Claude Desktop's config.
type stdioServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

type stdioClientConfig struct {
	MCPServers map[string]stdioServer `json:"mcpServers"`
}

// stdioConfig is Claude Desktop's config of "switchboard stdio" on dsn,
// given in the entry's env (serving toolset only, if not empty): this
// binary by its absolute path and a SQLite path made absolute, since the
// client starts the command from a directory of its own, with a PATH of
// its own.
func stdioConfig(dsn, toolset string) (stdioClientConfig, error) {
	self, err := os.Executable()
	if err != nil {
		return stdioClientConfig{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	if path, ok := sqlitePath(dsn); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return stdioClientConfig{}, err
		}
		// switchboard stdio would create an empty database there, and the
		// client would see no tools and no error.
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return stdioClientConfig{}, fmt.Errorf("--db: the database %s does not exist, so the client would see no servers; "+
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
	return stdioClientConfig{MCPServers: map[string]stdioServer{entryName(toolset): {Command: self, Args: args,
		Env: map[string]string{"SWITCHBOARD_DB": dsn}}}}, nil
}

// clientArg is client-config's Args: one client it knows, else the list
// of them.
func clientArg(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		if _, ok := clientConfigs[args[0]]; ok {
			return nil
		}
	}
	var b strings.Builder
	switch len(args) {
	case 0:
		b.WriteString("name the client to configure:")
	case 1:
		fmt.Fprintf(&b, "no client %q; the clients are:", args[0])
	default:
		b.WriteString("name one client; the clients are:")
	}
	for _, name := range slices.Sorted(maps.Keys(clientConfigs)) {
		fmt.Fprintf(&b, "\n  %-12s %s", name, clientConfigs[name])
	}
	return errors.New(b.String())
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
