package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func newStdioCommand() *cobra.Command {
	var (
		dsn, logLevel string
		toolset       string
		oauthKeyFile  string
		upstreamNets  []string
		sandboxUser   string
		mcpFlags      endpointFlags
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
is read when stdio starts.`,
		Example: `  # in claude_desktop_config.json:
  # "mcpServers": {"switchboard": {"command": "switchboard", "args": ["stdio", "--db", "sqlite:/home/me/switchboard.db"]}}
  switchboard stdio --db sqlite:./switchboard.db
  switchboard stdio --toolset coder`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			gwOpts, err := mcpFlags.options()
			if err != nil {
				return err
			}
			nets, err := upstreamNetworks(upstreamNets)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, dsn)
			if err != nil {
				return fmt.Errorf("opening the database %s: %w", store.Redact(dsn), err)
			}
			defer st.Close()
			if toolset != "" {
				toolsets, err := registry.NewToolsets(st, log)
				if err != nil {
					return err
				}
				if err := toolsets.Load(ctx); err != nil {
					return err
				}
				gwOpts.Toolsets = toolsets
			}
			box, err := sandboxRuntime(sandboxUser, log)
			if err != nil {
				return err
			}
			sessOpts := upstream.Options{Egress: egress.NewPolicy(nets), Instance: egress.NewInstance(), SandboxDefault: true, Sandbox: box}
			// The tokens "switchboard serve" keeps for OAuth servers serve here too.
			if sessOpts.OAuth, err = newOAuth(st, oauthKeyFile, &sessOpts); err != nil {
				log.Warn("OAuth tokens cannot be read: "+err.Error(), "error", err)
			}
			reg := registry.New(st, &registry.Options{Logger: log, Session: sessOpts})
			ex := executor.New(executor.NewMCP(reg))
			gwOpts.Executor, gwOpts.Logger, gwOpts.Version = ex, log, readBuildInfo().Version
			gw := gateway.New(reg, gwOpts)
			defer gw.Close()
			served := gw.Aggregate()
			if toolset != "" {
				var ok bool
				if served, ok = gw.ServeToolset(toolset); !ok {
					return fmt.Errorf("no toolset named %q; \"switchboard toolset list\" lists them", toolset)
				}
			}
			if err := reg.Load(ctx); err != nil {
				return err
			}
			runErr := served.Run(ctx, &mcp.StdioTransport{})
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := reg.Shutdown(sctx); err != nil {
				log.Warn("server shutdown", "error", err)
			}
			if runErr != nil && ctx.Err() == nil && !isEOF(runErr) {
				return runErr
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", envOr("SWITCHBOARD_DB", defaultDB), "database: sqlite:PATH or postgres://... (env SWITCHBOARD_DB)")
	registerOAuthKeyFlag(f, &oauthKeyFile)
	f.StringVar(&logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	f.StringVar(&toolset, "toolset", "", "serve only this toolset's tools, prompts and resources")
	registerUpstreamNetworks(f, &upstreamNets)
	registerSandboxUser(f, &sandboxUser)
	mcpFlags.register(f)
	return cmd
}

// isEOF reports whether err is the end of stdin: the client hung up, which
// is how a stdio server is told to stop.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)
}
