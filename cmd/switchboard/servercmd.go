package main

// This file holds the "server" verbs: add, list, show, rm, enable,
// disable, restart, test and logs, each one request to a running
// "switchboard serve" (edit is in editcmd.go, --wait in wait.go).

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newServerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Add, list, inspect and manage the servers of a running switchboard",
		Long: `The server verbs manage the MCP servers configured in a running
"switchboard serve", through its HTTP API at --addr (env SWITCHBOARD_ADDR,
default http://127.0.0.1:7420). Secrets (env and header values, the OAuth
client secret) are never shown: the API returns them as "***"; OAuth tokens
are never shown at all.`,
		Example: `  switchboard server add everything --command npx --arg -y --arg @modelcontextprotocol/server-everything
  switchboard server list
  switchboard server show everything`,
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	addTokenFlag(cmd, true)
	cmd.AddCommand(
		newServerAddCommand(),
		newServerEditCommand(),
		newServerListCommand(),
		newServerShowCommand(),
		newServerRmCommand(),
		newServerEnableCommand(true),
		newServerEnableCommand(false),
		newServerRestartCommand(),
		newServerTestCommand(),
		newServerLogsCommand(),
		newServerAuthCommand(),
	)
	return cmd
}

func newServerAddCommand() *cobra.Command {
	var (
		cfg                     sb.ServerConfig
		sf                      serverFlags
		disabled                bool
		startup, call, maxTotal time.Duration
		wf                      waitFlags
	)
	cmd := &cobra.Command{
		Use:   "add NAME (--command CMD [--arg A]... [--env K[=V]]... [--cwd DIR] | --url URL [--header K:V]... [--transport T])",
		Short: "Configure a new server and start it",
		Long: `add stores a new server in the running switchboard and, unless --disabled,
starts it; with --wait it waits for the first connection attempt and prints
its outcome (the tools, or the error and the phase it failed in), else it
returns at once: follow it with "server show" or "server list". NAME is
lowercase letters, digits and '-' (at most 48).

A stdio server is a command run without a shell (--command, --arg, --env,
--cwd); a remote server is a URL (--url, --header) reached over Streamable
HTTP, falling back to legacy SSE (--transport remote, the default), or over
one of them only (--transport streamable-http or sse).

A command with a slash (./mytool, bin/tool) and a relative --cwd are taken
against this shell's directory, as "check" takes them, and sent to the
daemon as absolute paths (a command against --cwd, if given). A command
without a slash (npx, uvx) is looked up by the daemon in the server's PATH
(--env PATH=..., else the daemon's own PATH, which need not be this
shell's).

--env K alone takes the value of K in this command's environment: a
secret given so is not on the command line, which every local user can
read while the command runs.

A stdio server runs sandboxed (see --no-sandbox), where only the system
directories and its mounts are visible. The daemon derives the mounts its
command needs when it stores the config, read-only: the package tree a
node_modules/.bin link leads into, the interpreter behind a pyenv or asdf
shim, a venv, an nvm, volta or uv install, a #! interpreter, and every
argument that is an absolute host path (a filesystem server's
directories). They are printed below the "added" line and by "server
show". The home directory, the user's config and state directories, the
daemon's database directory and / are never derived: they are listed as
refused. --mount HOST:rw makes a derived mount writable.`,
		Example: `  switchboard server add everything --command npx --arg -y --arg @modelcontextprotocol/server-everything --wait
  switchboard server add github --command ./github-mcp --env GITHUB_TOKEN --call-timeout 2m
  switchboard server add docs --url https://example.com/mcp --header "Authorization: Bearer $TOKEN"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Name = args[0]
			if err := sf.apply(cmd, &cfg); err != nil {
				return err
			}
			if err := resolvePaths(&cfg); err != nil {
				return err
			}
			if err := wf.check(); err != nil {
				return err
			}
			render.WarnCommand(cmd.ErrOrStderr(), &cfg)
			if err := checkDurations(cmd, "startup-timeout", "call-timeout", "max-total"); err != nil {
				return err
			}
			cfg.StartupTimeoutMS = startup.Milliseconds()
			cfg.CallTimeoutMS = call.Milliseconds()
			cfg.MaxTotalTimeoutMS = maxTotal.Milliseconds()
			if disabled {
				off := false
				cfg.Enabled = &off
			}
			return withClient(cmd, func(c *client.Client) error {
				return wf.change(cmd, c, cfg.Name, &cfg, true,
					func() (sb.ServerView, error) { return c.CreateServer(cmd.Context(), &cfg) },
					func(v *sb.ServerView, waiting bool) string {
						if waiting {
							return fmt.Sprintf("added %s (%s)", v.Name, v.Transport)
						}
						return fmt.Sprintf("added %s (%s, status %s)", v.Name, v.Transport, v.Runtime.Status)
					})
			})
		},
	}
	f := cmd.Flags()
	sf.register(f, &cfg, "; stored as a secret")
	wf.register(f)
	f.BoolVar(&disabled, "disabled", false, "store the server without starting it")
	f.DurationVar(&startup, "startup-timeout", 0, "how long one connection attempt may take (default 120s stdio, 30s remote)")
	f.DurationVar(&call, "call-timeout", 0, "per-request timeout of a tool call (default 60s)")
	f.DurationVar(&maxTotal, "max-total", 0, "hard cap on one tool call, progress included (default none)")
	return cmd
}

func newServerListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List every server with its status",
		Long: `list prints one line per configured server: its status (connecting,
connected, error, disabled), transport, number of tools, transparent
reconnects, and the last error with the phase where it happened, cut to
fit a line; -o wide adds the pid and the error's code and prints the whole
error.`,
		Example: `  switchboard server list
  switchboard server list -o wide
  switchboard server list -o json | jq -r '.servers[] | select(.runtime.status == "error") | .name'`,
		Args: cobra.NoArgs,
		RunE: clientVerb(func(cmd *cobra.Command, _ []string, c *client.Client) error {
			servers, err := c.Servers(cmd.Context())
			if err != nil {
				return err
			}
			return show(cmd, api.ServerList{Servers: servers}, func(out io.Writer) { render.ServerList(out, servers, wideOutput(cmd)) })
		}),
	}
}

func newServerShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show one server's config, runtime state and tools",
		Long: `show prints a server's config (secrets masked as "***"), its runtime state
(status, last error with phase and code, retries, pid, protocol, server
info) and its tools.`,
		Example: `  switchboard server show everything
  switchboard server show everything -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			v, err := c.Server(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return show(cmd, v, func(out io.Writer) { render.ServerView(out, &v, time.Now()) })
		}),
	}
}

func newServerRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove", "delete"},
		Short:             "Stop a server and remove its config",
		Long:              `rm stops the server (and its process, for a stdio server) and deletes its config.`,
		Example:           `  switchboard server rm everything`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			if err := c.DeleteServer(cmd.Context(), args[0], 0); err != nil {
				return err
			}
			return show(cmd, map[string]string{"removed": args[0]}, func(out io.Writer) { fmt.Fprintf(out, "removed %s\n", args[0]) })
		}),
	}
}

func newServerEnableCommand(on bool) *cobra.Command {
	verb, short, long := "enable", "Enable a server and start it",
		`enable marks the server enabled and starts it; with --wait it waits for the
first connection attempt and prints its outcome, else it returns at once.`
	if !on {
		verb, short, long = "disable", "Disable a server and stop it",
			`disable marks the server disabled and stops it (and its process, for a stdio
server); its config is kept. Calls to its tools fail until it is enabled.`
	}
	var wf waitFlags
	cmd := &cobra.Command{
		Use:               verb + " NAME",
		Short:             short,
		Long:              long,
		Example:           "  switchboard server " + verb + " everything",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			return withClient(cmd, func(c *client.Client) error {
				return wf.change(cmd, c, args[0], nil, false,
					func() (sb.ServerView, error) { return c.SetEnabled(cmd.Context(), args[0], on) },
					func(v *sb.ServerView, waiting bool) string {
						if waiting {
							return fmt.Sprintf("%sd %s", verb, v.Name)
						}
						return fmt.Sprintf("%sd %s (status %s)", verb, v.Name, v.Runtime.Status)
					})
			})
		},
	}
	if on {
		wf.register(cmd.Flags())
	}
	return cmd
}

func newServerRestartCommand() *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Reconnect a server (restart its process) now",
		Long: `restart closes the server's session and connects again at once, restarting
the process of a stdio server, and resets its retry budget. With --wait it
waits for the new connection attempt and prints its outcome; else it
returns at once.`,
		Example: `  switchboard server restart everything
  switchboard server restart everything --wait`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			return withClient(cmd, func(c *client.Client) error {
				var cfg *sb.ServerConfig
				if wf.wait {
					v, err := c.Server(cmd.Context(), args[0]) // for its startup timeout
					if err != nil {
						return err
					}
					cfg = &v.ServerConfig
				}
				w, err := wf.watch(cmd, c, args[0])
				if err != nil {
					return err
				}
				defer w.Close()
				if err := c.RestartServer(cmd.Context(), args[0]); err != nil {
					return err
				}
				out, asJSON := cmd.OutOrStdout(), jsonOutput(cmd)
				if w != nil {
					if !asJSON {
						fmt.Fprintf(out, "restarting %s\n", args[0])
					}
					return w.Finish(cmd.Context(), out, asJSON, args[0], cfg, nil)
				}
				if asJSON {
					return render.JSON(out, api.RestartResponse{Status: api.StatusRestarting})
				}
				fmt.Fprintf(out, "restarting %s\n", args[0])
				return nil
			})
		},
	}
	wf.register(cmd.Flags())
	return cmd
}

func newServerTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Connect to a server in a fresh, isolated session and report what it offers",
		Long: `test runs a throwaway session for a configured server, apart from its live
session (which it never touches): one attempt, then shut down. It prints
what "switchboard check" prints: the status, transport, protocol, server
info and tools, or the error with its phase and code and the last lines
the server wrote to stderr. The exit status is non-zero unless it
connected.`,
		Example: `  switchboard server test everything
  switchboard server test everything -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			res, err := c.TestServer(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			failed := res.Runtime.Status != sb.StatusConnected
			if err := show(cmd, res, func(out io.Writer) { render.Info(out, res.Runtime, res.Logs, failed) }); err != nil || !failed {
				return err
			}
			return fmt.Errorf("%s: the test session did not connect", args[0])
		}),
	}
}

func newServerLogsCommand() *cobra.Command {
	var (
		tail   int
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the lines a stdio server wrote to stderr; -f follows them",
		Long: `logs prints the stderr lines kept for a stdio server (the last 500, oldest
first). Remote servers have none, and logs says so.

-f (--follow) keeps printing: each new line with the time the daemon read
it (within 250 ms of its writing), and a marker line at each change of the
server's state: "--- starting (attempt N)" at each connection attempt (for
a stdio server, a new process), and when it connected, failed, dropped or
stopped. It ends with Ctrl-C, or when the server is removed. -o json
prints one JSON object per line: {"line", "at"} or {"event"}.`,
		Example: `  switchboard server logs everything
  switchboard server logs everything -n 20
  switchboard server logs everything -f`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return fmt.Errorf("--tail must not be negative")
			}
			return withClient(cmd, func(c *client.Client) error {
				return render.Logs(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], tail, follow, jsonOutput(cmd))
			})
		},
	}
	cmd.Flags().IntVarP(&tail, "tail", "n", 0, "print only the last N lines kept (default all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines, with times, and a marker at each restart")
	return cmd
}
