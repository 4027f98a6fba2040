package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemon"
	"github.com/switchboard-mcp/switchboard/internal/render"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func newCheckCommand() *cobra.Command {
	var (
		cfg            sb.ServerConfig
		sf             serverFlags
		startupTimeout time.Duration
		verbose        bool
		sandboxUser    string
	)
	cmd := &cobra.Command{
		Use:   "check (--command CMD [--arg A]... [--env K=V]... | --url URL [--header K:V]...)",
		Short: "Connect to one MCP server, list what it offers, and disconnect",
		Long: `check runs a throwaway session to one MCP server described by flags and
prints its runtime info: status, transport, protocol version, server info and
tools; or the error with the phase where it failed (spawn, connect,
initialize, discover, auth, ...). The session makes at most one attempt and
leaves no process behind. The exit status is non-zero unless it connected.

A command with a slash and a relative --cwd are taken against this shell's
directory, as "server add" takes them; a command without one is looked up
in PATH (--env PATH=..., else this shell's).`,
		Example: `  switchboard check --command npx --arg -y --arg @modelcontextprotocol/server-everything
  switchboard check --url https://example.com/mcp --header "Authorization: Bearer $TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Name = "check"
			if err := sf.apply(cmd, &cfg); err != nil {
				return err
			}
			if err := resolvePaths(&cfg); err != nil {
				return err
			}
			cfg.StartupTimeoutMS = startupTimeout.Milliseconds()
			// The derived mounts server add would store.
			sandbox.Apply(&cfg, sandbox.HostOf())
			level := slog.LevelWarn + 1 // quiet unless asked: the result is printed below
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			box, err := daemon.SandboxRuntime(sandboxUser, log)
			if err != nil {
				return err
			}
			res, err := registry.TestSession(cmd.Context(), &cfg, &upstream.Options{Logger: log, SandboxDefault: true, Sandbox: box})
			if err != nil {
				return err
			}
			failed := res.Runtime.Status != sb.StatusConnected
			if jsonOutput(cmd) {
				if err := render.CheckJSON(cmd.OutOrStdout(), res.Runtime, res.Logs); err != nil {
					return err
				}
			} else {
				render.Info(cmd.OutOrStdout(), res.Runtime, res.Logs, failed)
			}
			if failed {
				return fmt.Errorf("not connected")
			}
			return nil
		},
	}
	f := cmd.Flags()
	sf.register(f, &cfg, "")
	f.DurationVar(&startupTimeout, "startup-timeout", 0, "how long to wait for the connection (default 120s stdio, 30s remote)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every step of the session to stderr")
	registerSandboxUser(f, &sandboxUser)
	return cmd
}
