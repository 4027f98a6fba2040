package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client.Client) error {
				return printEvents(cmd.Context(), c, cmd.OutOrStdout(), args, jsonOutput(cmd))
			})
		},
	}
	addTokenFlag(cmd, false)
	return cmd
}

// printEvents prints the status events of the servers named (every
// server if none) until the stream ends or ctx does (Ctrl-C, not an
// error here).
func printEvents(ctx context.Context, c *client.Client, out io.Writer, names []string, asJSON bool) error {
	s, err := c.Events(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return printStream(ctx, s.Next, errors.New("the daemon ended the event stream (did it stop?)"), func(ev sb.Event) error {
		if len(names) > 0 && !slices.Contains(names, ev.Server) {
			return nil
		}
		if asJSON {
			return enc.Encode(ev)
		}
		_, err := fmt.Fprintf(out, "%s %s %s\n", formatStamp(ev.At), ev.Server, describeEvent(&ev))
		return err
	})
}

// describeEvent reads "attempt_failed (attempt 1, status connecting):
// spawn: command_not_found: ./x: command not found".
func describeEvent(ev *sb.Event) string {
	s := string(ev.Reason)
	switch {
	case ev.Reason == sb.ReasonStarting:
		// The event counts the attempts that failed before this one.
		s += fmt.Sprintf(" (attempt %d)", ev.Attempt+1)
	case ev.Reason == sb.ReasonAttemptFailed:
		s += fmt.Sprintf(" (attempt %d, status %s)", ev.Attempt, ev.Status)
	case ev.Status != ev.Previous && ev.Previous != "":
		s += fmt.Sprintf(" (status %s -> %s)", ev.Previous, ev.Status)
	default:
		s += fmt.Sprintf(" (status %s)", ev.Status)
	}
	if e := ev.Error; e != nil && (ev.Reason == sb.ReasonAttemptFailed || ev.Reason == sb.ReasonDropped) {
		s += fmt.Sprintf(": %s: %s: %s", e.Phase, e.Code, e.Message)
	}
	return s
}
