package main

import (
	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Run MCP tool servers dependably",
		Long: `Switchboard keeps long-lived client sessions to MCP servers (stdio child
processes and remote Streamable HTTP or SSE servers) and makes calling their
tools dependable: bounded retries, transparent reconnects, health checks,
and errors that say where and why a server failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	addr, _ := client.Env()
	pf.String("addr", addr, `address of "switchboard serve" for the client verbs (env SWITCHBOARD_ADDR)`)
	pf.Bool("json", false, "print JSON (the API's, for scripts) instead of tables")
	root.AddCommand(newCheckCommand(), newServeCommand(), newStdioCommand(),
		newServerCommand(), newToolsCommand(), newCallCommand(), newImportCommand(), newClientConfigCommand(), newWebCommand())
	return root
}
