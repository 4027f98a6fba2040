package main

import (
	"github.com/spf13/cobra"
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
	root.AddCommand(newCheckCommand(), newServeCommand())
	return root
}
