package main

import (
	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newEventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events [NAME]...",
		Short: "Print every status change of the servers as it happens",
		Long: `events prints the daemon's status events, one line per event, as they
happen: when, which server, what happened (starting, connected,
attempt_failed, dropped, restarted, tools_changed, stopped, created,
updated, deleted), its status, and the error with its phase. With NAMEs,
only those servers' events. -o json prints each event as one JSON object
per line. It runs until Ctrl-C or until the daemon stops.`,
		Example: `  switchboard events
  switchboard events everything
  switchboard events -o json | jq -r 'select(.reason == "dropped") | .server'`,
		ValidArgsFunction: completeServerNames,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			return render.Events(cmd.Context(), c, cmd.OutOrStdout(), args, jsonOutput(cmd))
		}),
	}
	addTokenFlag(cmd, false)
	return cmd
}
