package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/clientconfig"
	"github.com/switchboard-mcp/switchboard/internal/daemon"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

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
			s, err := clientconfig.Make(clientconfig.Request{Client: args[0], Toolset: toolset, DSN: dsn,
				Daemon: func() (string, string, error) { return daemonFrom(cmd) }, CredentialFile: render.CredentialHint(), TokenGiven: tokenGiven(cmd), Embed: embed})
			if err != nil {
				return err
			}
			if s.NoCredential {
				fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: no credential for %s (no --token or SWITCHBOARD_TOKEN, and, for a daemon on loopback, no %s): the snippet sends none, which only a daemon started with --%s accepts\n",
					s.BaseURL, render.CredentialHint(), daemon.InsecureNoAuthFlag)
			}
			if write != "" {
				if err := clientconfig.WriteFile(write, s.JSON); errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("--write %s: the file exists; merge the snippet into it by hand (print it without --write)", write)
				} else if err != nil {
					return fmt.Errorf("--write: %w", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "# wrote %s (mode 0600)\n", write)
			} else {
				cmd.OutOrStdout().Write(s.JSON)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "# for %s\n", clientconfig.Clients[args[0]])
			for _, n := range s.Notes {
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

// tokenGiven reports whether the command was given a token (--token,
// --token-file or SWITCHBOARD_TOKEN), not left to find the daemon's own credential.
func tokenGiven(cmd *cobra.Command) bool {
	t, _ := cmd.Flags().GetString("token")
	file, _ := cmd.Flags().GetString("token-file")
	return t != "" || file != "" || os.Getenv(client.EnvToken) != ""
}

// clientArg is client-config's Args: one client it knows, else the list
// of them.
func clientArg(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		if _, ok := clientconfig.Clients[args[0]]; ok {
			return nil
		}
	}
	return render.ClientChoice(args, clientconfig.Clients)
}
