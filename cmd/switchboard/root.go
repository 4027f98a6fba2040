package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/buildinfo"
	"github.com/switchboard-mcp/switchboard/internal/render"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Run MCP tool servers dependably",
		Long: `Switchboard keeps long-lived client sessions to MCP servers (stdio child
processes and remote Streamable HTTP or SSE servers) and makes calling their
tools dependable: bounded retries, transparent reconnects, health checks,
and errors that say where and why a server failed.`,
		Version:       buildinfo.Read(version).String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	addr, _ := client.Env()
	pf.String("addr", addr, `address of "switchboard serve" for the client verbs (env SWITCHBOARD_ADDR)`)
	pf.String("daemon-uid", os.Getenv(client.EnvDaemonUID), `the uid "switchboard serve" runs as, when it is not this user's: the client verbs send nothing to a loopback address held by another uid than this one or root (env SWITCHBOARD_DAEMON_UID)`)
	pf.VarP(new(render.Format), "output", "o", "output format: text (tables), wide (tables with every column, nothing cut) or json (the API's, for scripts)")
	pf.Bool("json", false, "print JSON (the API's, for scripts) instead of tables: -o json")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "wide", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(newCheckCommand(), newServeCommand(), newStdioCommand(),
		newServerCommand(), newToolsCommand(), newCallCommand(), newImportCommand(), newClientConfigCommand(),
		newEventsCommand(), newVersionCommand(), newWebCommand(), newToolsetCommand(), newTokenCommand(), newAuditCommand())
	return root
}

// subcommandArgs is the Args of a group of verbs (server, toolset, token):
// an argument that names none of its verbs is refused with the nearest
// ones, as cobra suggests verbs only for the root's own.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var verbs []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			verbs = append(verbs, c.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := upstream.Suggest(args[0], verbs); len(s) > 0 {
		msg += fmt.Sprintf(": did you mean %q?", s[0])
	}
	return fmt.Errorf("%s (see %q)", msg, cmd.CommandPath()+" --help")
}
