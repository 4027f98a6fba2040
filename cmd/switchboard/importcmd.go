package main

// This file holds "import": it reads another client's MCP server list
// (Claude Desktop, Cursor, VS Code) with package clientconfig and creates each
// server through the API of a running switchboard.

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/clientconfig"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newImportCommand() *cobra.Command {
	var dryRun, disabled bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import the MCP servers of a Claude Desktop, Cursor or VS Code config file",
		Long: `import reads the server list of another MCP client and creates each server
in the running switchboard: Claude Desktop's claude_desktop_config.json,
Cursor's mcp.json (~/.cursor or a project's .cursor), VS Code's mcp.json
(a project's .vscode) or settings.json.

Names are normalised to Switchboard's rule (lowercase letters, digits and
'-'); renamed servers are listed. Entries that cannot be imported (an
input VS Code would prompt for, an unset ${env:NAME}, no command or url)
are skipped with the reason, as are servers whose name is already
configured ("exists"): import never replaces a server. Other refusals are
reported as failures and make the exit status non-zero, after the rest
was imported. --dry-run reports what would happen and changes nothing.

Each server's summary lists its env (values masked, and which came from
this shell's environment through ${env:NAME}) and every mount its sandbox
gets: the derived ones, read-only (what its command runs, and arguments
that are host paths), and those refused. The home directory, the user's
config and state directories, serve's database directory and / are never
mounted, however the file names them (${userHome} included). Use
--dry-run to read the summary before anything is stored.`,
		Example: `  switchboard import ~/Library/Application\ Support/Claude/claude_desktop_config.json
  switchboard import .vscode/mcp.json --dry-run
  switchboard import ~/.cursor/mcp.json --disabled`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := clientconfig.ParseFile(args[0])
			if err != nil {
				return err
			}
			if disabled {
				off := false
				for _, cfg := range res.Servers {
					cfg.Enabled = &off
				}
			}
			return withClient(cmd, func(c *client.Client) error {
				rep, err := clientconfig.Import(cmd.Context(), c, args[0], res, dryRun, func(err error) {
					fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: not checking which names are taken: %v\n", render.Explain(cmd.Context(), c, err))
				})
				if err != nil {
					return err
				}
				if err := show(cmd, rep, func(out io.Writer) { render.ImportReport(out, rep, res) }); err != nil {
					return err
				}
				if n := len(rep.Failed); n > 0 {
					return fmt.Errorf("%d of %d servers could not be imported", n, len(res.Servers))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be imported without changing anything")
	cmd.Flags().BoolVar(&disabled, "disabled", false, "import every server disabled (start them later with \"server enable\")")
	addTokenFlag(cmd, false)
	return cmd
}
