package main

import (
	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/internal/buildinfo"
	"github.com/switchboard-mcp/switchboard/internal/daemon"
)

func newStdioCommand() *cobra.Command {
	var (
		dsn, logLevel string
		toolset       string
		oauthKeyFile  string
		upstreamNets  []string
		sandboxUser   string
		endpoint      daemon.Endpoint
		auditOpts     auditFlags
	)
	cmd := &cobra.Command{
		Use:   "stdio [--db DSN]",
		Short: "Serve every configured server as one MCP server on stdin/stdout",
		Long: `stdio is for MCP clients that start their servers as a command (Claude
Desktop, IDEs): it runs the servers configured in the database itself (no
"switchboard serve" needed) and speaks MCP on stdin and stdout, with every
server's tools and prompts named "<server>__<name>" and resources under
their own URIs. Logs go to stderr. It exits when stdin closes, stopping
every server it started. Stdio servers run sandboxed as under serve.

The servers start with it, so the client's first tools/list (and prompts
and resources lists, and a call of a tool not listed yet) is answered once
every enabled server has connected or failed its first attempt, or after
--ready-timeout; a server that connects later is announced with
notifications/tools/list_changed, one for the servers that start together.
A tool call is capped at --max-total-timeout, progress or not, unless the
server's max_total_timeout_ms says otherwise.

With --toolset NAME it serves that toolset instead of every server: only
the tools, prompts and resources the toolset selects, under the names it
gives them (see "switchboard toolset --help"). No token is needed: the
client is the local user, who can read the database anyway. The toolset
is read when stdio starts.

Every tool call, resource read and prompt get is recorded in the
database's audit log (surface "stdio", principal "local") unless
--audit=false; "switchboard audit" reads it.

It exports OpenTelemetry traces as serve does when the OTEL_* environment
asks for it (OTEL_EXPORTER_OTLP_ENDPOINT, ...): to the collector, never to
stdout.`,
		Example: `  # in claude_desktop_config.json:
  # "mcpServers": {"switchboard": {"command": "switchboard", "args": ["stdio", "--db", "sqlite:/home/me/switchboard.db"]}}
  switchboard stdio --db sqlite:./switchboard.db
  switchboard stdio --toolset coder`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := daemon.NewLogger(cmd.ErrOrStderr(), logLevel)
			if err != nil {
				return err
			}
			gwOpts, err := endpoint.Options()
			if err != nil {
				return err
			}
			nets, err := daemon.UpstreamNetworks(upstreamNets)
			if err != nil {
				return err
			}
			auditCfg, err := auditOpts.config()
			if err != nil {
				return err
			}
			gwOpts.Logger, gwOpts.Version = log, buildinfo.Read(version).Version
			stopTraces, err := daemon.StartTraces(cmd.Context(), log, gwOpts.Version)
			if err != nil {
				return err
			}
			defer stopTraces()
			return daemon.Stdio(cmd.Context(), daemon.StdioConfig{DSN: dsn, Toolset: toolset, OAuthKeyFile: oauthKeyFile,
				AllowedNetworks: nets, SandboxUser: sandboxUser, Audit: auditCfg}, gwOpts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", envOr("SWITCHBOARD_DB", defaultDB), "database: sqlite:PATH or postgres://... (env SWITCHBOARD_DB)")
	registerOAuthKeyFlag(f, &oauthKeyFile)
	f.StringVar(&logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	f.StringVar(&toolset, "toolset", "", "serve only this toolset's tools, prompts and resources")
	registerUpstreamNetworks(f, &upstreamNets)
	registerSandboxUser(f, &sandboxUser)
	registerEndpoint(f, &endpoint)
	auditOpts.register(f)
	return cmd
}
