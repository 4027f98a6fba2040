package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newAuditCommand() *cobra.Command {
	var (
		f      client.AuditFilter
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log: who called which tool, when, with what outcome",
		Long: `audit prints the entries of the daemon's audit log, the oldest first, one
line each: when the call began, who made it (an API token's name, admin,
anonymous, or local for stdio), the surface it came by (mcp, mcp_server,
toolset:NAME, api, stdio), its outcome (ok, or the failure's code), how
long it took, what it was (server/tool, a resource's server and URI, a
prompt, or an API request's method and path), and the sizes of its
arguments and result. Without filters, the newest --limit entries. Filters
combine; --since and --until take an RFC 3339 time or a duration before
now (90m, 24h). -f prints the entries, then every new one as it is
written (entries are written in batches, within a second), until Ctrl-C;
with replicas sharing a database, every replica's. -o json prints each
entry as one JSON object per line.`,
		Example: `  switchboard audit
  switchboard audit --server github --since 1h
  switchboard audit --principal ci --outcome timeout -f
  switchboard audit -o json --limit 1000 | jq -r 'select(.outcome != "ok") | .tool'`,
		Args: cobra.NoArgs,
		RunE: clientVerb(func(cmd *cobra.Command, _ []string, c *client.Client) error {
			asJSON, out := jsonOutput(cmd), cmd.OutOrStdout()
			emit := func(e api.AuditEntry) error { return render.AuditEntry(out, e, asJSON) }
			if follow {
				return c.FollowAudit(cmd.Context(), f, time.Second, emit)
			}
			es, err := c.Audit(cmd.Context(), f)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := emit(e); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Server, "server", "", "only the calls of this server")
	fl.StringVar(&f.Tool, "tool", "", "only the calls of this tool (or resource URI, prompt, or API request \"METHOD /path\")")
	fl.StringVar(&f.Principal, "principal", "", "only the calls of this principal: an API token's name, admin, anonymous or local")
	fl.StringVar(&f.Outcome, "outcome", "", "only the calls of this outcome: ok, or a code (tool_error, timeout, unavailable, ...)")
	fl.StringVar(&f.Since, "since", "", "only the calls since this time (RFC 3339) or this long ago (90m)")
	fl.StringVar(&f.Until, "until", "", "only the calls before this time (RFC 3339) or this long ago")
	fl.IntVar(&f.Limit, "limit", 100, "at most this many entries (the newest), up to 10000; with -f, per read")
	fl.BoolVarP(&follow, "follow", "f", false, "keep printing new entries as they are written")
	addTokenFlag(cmd, false)
	return cmd
}
