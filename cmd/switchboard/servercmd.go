package main

// This file holds the "server" verbs: add, list, show, rm, enable,
// disable, restart, test and logs, each one request to a running
// "switchboard serve" (edit is in editcmd.go, --wait in wait.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/prompt"
)

// listErrorWidth bounds the ERROR column of "server list".
const listErrorWidth = 60

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
			warnCommand(cmd.ErrOrStderr(), &cfg)
			for _, d := range []struct {
				flag string
				d    time.Duration
			}{{"--startup-timeout", startup}, {"--call-timeout", call}, {"--max-total", maxTotal}} {
				if d.d < 0 {
					return fmt.Errorf("%s must not be negative", d.flag)
				}
			}
			cfg.StartupTimeoutMS = startup.Milliseconds()
			cfg.CallTimeoutMS = call.Milliseconds()
			cfg.MaxTotalTimeoutMS = maxTotal.Milliseconds()
			if disabled {
				off := false
				cfg.Enabled = &off
			}
			return withClient(cmd, func(c *client.Client) error {
				aw, err := wf.watch(cmd, c, cfg.Name)
				if err != nil {
					return err
				}
				defer aw.close()
				v, err := c.CreateServer(cmd.Context(), &cfg)
				if err != nil {
					return err
				}
				out, asJSON := cmd.OutOrStdout(), jsonOutput(cmd)
				if aw != nil {
					if !asJSON {
						fmt.Fprintf(out, "added %s (%s)\n", v.Name, v.Transport)
						printMounts(out, v.Sandbox)
					}
					return aw.finish(cmd.Context(), out, asJSON, v.Name, &cfg, &v)
				}
				if asJSON {
					return printJSON(out, v)
				}
				fmt.Fprintf(out, "added %s (%s, status %s)\n", v.Name, v.Transport, v.Runtime.Status)
				printMounts(out, v.Sandbox)
				return nil
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClient(cmd, func(c *client.Client) error {
				servers, err := c.Servers(cmd.Context())
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return printJSON(cmd.OutOrStdout(), api.ServerList{Servers: servers})
				}
				printServerList(cmd.OutOrStdout(), servers, wideOutput(cmd))
				return nil
			})
		},
	}
}

// printServerList prints the table of "server list": errors cut to fit
// a line, or, wide, whole (on one line) with their code and the pid.
func printServerList(out io.Writer, servers []sb.ServerView, wide bool) {
	if len(servers) == 0 {
		fmt.Fprintln(out, `no servers configured; add one with "switchboard server add"`)
		return
	}
	tw := newTable(out)
	if wide {
		fmt.Fprintln(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tRECONNECTS\tPID\tCODE\tERROR")
	} else {
		fmt.Fprintln(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tRECONNECTS\tERROR")
	}
	cut := false
	for _, v := range servers {
		transport := string(v.Runtime.Transport)
		if transport == "" {
			transport = string(v.Transport)
		}
		tools := "-"
		if v.Runtime.Status == sb.StatusConnected {
			tools = strconv.Itoa(v.Runtime.ToolCount)
		}
		errText, code := "-", "-"
		if e := v.Runtime.Error; e != nil {
			whole := string(e.Phase) + ": " + e.Message
			code = string(e.Code)
			if wide {
				errText = strings.Join(strings.Fields(whole), " ")
			} else {
				errText = prompt.FirstLine(whole, listErrorWidth)
				cut = cut || errText != whole
			}
		}
		if wide {
			pid := "-"
			if v.Runtime.PID != 0 {
				pid = strconv.Itoa(v.Runtime.PID)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", v.Name, v.Runtime.Status, transport, tools, v.Runtime.Reconnects, pid, code, errText)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", v.Name, v.Runtime.Status, transport, tools, v.Runtime.Reconnects, errText)
		}
	}
	tw.Flush()
	if cut {
		fmt.Fprintln(out, `(errors cut to fit; "server list -o wide" or "server show NAME" prints them whole)`)
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client.Client) error {
				v, err := c.Server(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return printJSON(cmd.OutOrStdout(), v)
				}
				printServerView(cmd.OutOrStdout(), &v, time.Now())
				return nil
			})
		},
	}
}

// printServerView prints "server show": config, runtime, tools.
func printServerView(out io.Writer, v *sb.ServerView, now time.Time) {
	tw := newTable(out)
	row := func(k, val string) {
		if val != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, val)
		}
	}
	ms := func(v int64, def string) string {
		if v == 0 {
			return def
		}
		return (time.Duration(v) * time.Millisecond).String()
	}
	row("name", v.Name)
	row("enabled", strconv.FormatBool(v.IsEnabled()))
	row("transport", string(v.Transport))
	row("command", v.Command)
	if len(v.Args) > 0 {
		row("args", quoteArgs(v.Args))
	}
	row("env", sortedPairs(v.Env, "="))
	row("cwd", v.Cwd)
	row("url", v.URL)
	row("headers", sortedPairs(v.Headers, ": "))
	if v.OAuth != nil {
		row("oauth", describeOAuth(v.OAuth))
	}
	row("startup timeout", ms(v.StartupTimeoutMS, "default ("+v.StartupTimeout().String()+")"))
	row("call timeout", ms(v.CallTimeoutMS, "default ("+sb.DefaultCallTimeout.String()+")"))
	row("max total", ms(v.MaxTotalTimeoutMS, "none"))
	if v.ProtocolVersion != "" {
		row("protocol (pinned)", v.ProtocolVersion)
	}
	if r := v.Retry; r != nil {
		row("retry", fmt.Sprintf("max_attempts=%d delays_ms=%v slow_retry_ms=%d", r.MaxAttempts, r.DelaysMS, r.SlowRetryMS))
	}
	if s := v.Sandbox; s != nil && s.Enabled != nil {
		row("sandbox", map[bool]string{true: "required", false: "off"}[*s.Enabled])
	}
	for i, l := range mountLines(v.Sandbox) {
		if i == 0 {
			row("mounts", l)
		} else {
			row("", l)
		}
	}
	row("version", strconv.FormatInt(v.Version, 10))
	row("created", formatTime(v.CreatedAt, now))
	row("updated", formatTime(v.UpdatedAt, now))
	tw.Flush()

	rt := v.Runtime
	fmt.Fprintln(out, "\nruntime")
	tw = newTable(out)
	row("  status", string(rt.Status))
	if e := rt.Error; e != nil {
		row("  error", e.Message)
		row("  phase", string(e.Phase))
		row("  code", string(e.Code))
		if !e.At.IsZero() {
			row("  at", formatTime(e.At, now))
		}
	}
	if rt.Attempt > 0 {
		row("  attempt", strconv.Itoa(rt.Attempt))
	}
	row("  reconnects", strconv.Itoa(rt.Reconnects))
	if rt.NextRetryAt != nil {
		row("  next retry", formatTime(*rt.NextRetryAt, now))
	}
	if rt.StartupTimedOut {
		row("  startup", "timed out; still trying")
	}
	if rt.ConnectedSince != nil {
		row("  connected since", formatTime(*rt.ConnectedSince, now))
	}
	row("  transport", string(rt.Transport))
	row("  protocol", rt.ProtocolVersion)
	if rt.ServerInfo != nil {
		row("  server", strings.TrimSpace(rt.ServerInfo.Name+" "+rt.ServerInfo.Version))
	}
	if rt.PID != 0 {
		row("  pid", strconv.Itoa(rt.PID))
	}
	if sbx := rt.Sandbox; sbx != nil {
		row("  sandbox", sandboxSummary(sbx))
	}
	if rt.Status == sb.StatusConnected {
		row("  tools", strconv.Itoa(rt.ToolCount))
		row("  resources", strconv.Itoa(rt.ResourceCount))
		row("  prompts", strconv.Itoa(rt.PromptCount))
	}
	tw.Flush()

	if len(rt.Tools) > 0 {
		fmt.Fprintln(out)
		printToolTable(out, v.Name, rt.Tools)
	}
}

// printToolTable prints TOOL/DESCRIPTION rows of one server's tools, each
// named by the address "call" takes.
func printToolTable(out io.Writer, server string, tools []sb.ToolInfo) {
	tw := newTable(out)
	fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s/%s\t%s\n", server, t.Name, prompt.FirstLine(t.Description, 80))
	}
	tw.Flush()
}

// sortedPairs prints a map as "K=V, K=V" in key order.
func sortedPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return strings.Join(parts, ", ")
}

// quoteArgs prints arguments separated by spaces, quoting the ones that
// would otherwise be ambiguous.
func quoteArgs(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client.Client) error {
				if err := c.DeleteServer(cmd.Context(), args[0], 0); err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return printJSON(cmd.OutOrStdout(), map[string]string{"removed": args[0]})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
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
				aw, err := wf.watch(cmd, c, args[0])
				if err != nil {
					return err
				}
				defer aw.close()
				v, err := c.SetEnabled(cmd.Context(), args[0], on)
				if err != nil {
					return err
				}
				out, asJSON := cmd.OutOrStdout(), jsonOutput(cmd)
				if aw != nil {
					if !asJSON {
						fmt.Fprintf(out, "%sd %s\n", verb, v.Name)
					}
					return aw.finish(cmd.Context(), out, asJSON, v.Name, &v.ServerConfig, &v)
				}
				if asJSON {
					return printJSON(out, v)
				}
				fmt.Fprintf(out, "%sd %s (status %s)\n", verb, v.Name, v.Runtime.Status)
				return nil
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
				aw, err := wf.watch(cmd, c, args[0])
				if err != nil {
					return err
				}
				defer aw.close()
				if err := c.RestartServer(cmd.Context(), args[0]); err != nil {
					return err
				}
				out, asJSON := cmd.OutOrStdout(), jsonOutput(cmd)
				if aw != nil {
					if !asJSON {
						fmt.Fprintf(out, "restarting %s\n", args[0])
					}
					return aw.finish(cmd.Context(), out, asJSON, args[0], cfg, nil)
				}
				if asJSON {
					return printJSON(out, api.RestartResponse{Status: api.StatusRestarting})
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client.Client) error {
				res, err := c.TestServer(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				failed := res.Runtime.Status != sb.StatusConnected
				if jsonOutput(cmd) {
					if err := printJSON(cmd.OutOrStdout(), res); err != nil {
						return err
					}
				} else {
					printInfo(cmd.OutOrStdout(), res.Runtime, res.Logs, failed)
				}
				if failed {
					return fmt.Errorf("%s: the test session did not connect", args[0])
				}
				return nil
			})
		},
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
				ctx, out := cmd.Context(), cmd.OutOrStdout()
				v, err := c.Server(ctx, args[0])
				if err != nil {
					return err
				}
				if !v.IsStdio() {
					if jsonOutput(cmd) && !follow {
						return printJSON(out, api.LogLines{Lines: []string{}})
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "%s is a remote server (%s): it has no process, so there are no stderr lines to show; see \"server show %s\" for its state\n", v.Name, v.Transport, v.Name)
					return nil
				}
				if follow {
					return followLogs(ctx, c, out, args[0], tail, jsonOutput(cmd))
				}
				lines, err := c.Logs(ctx, args[0])
				if err != nil {
					return err
				}
				if tail > 0 && len(lines) > tail {
					lines = lines[len(lines)-tail:]
				}
				if jsonOutput(cmd) {
					return printJSON(out, api.LogLines{Lines: lines})
				}
				var b strings.Builder
				for _, l := range lines {
					b.WriteString(l)
					b.WriteByte('\n')
				}
				_, err = io.WriteString(out, b.String())
				return err
			})
		},
	}
	cmd.Flags().IntVarP(&tail, "tail", "n", 0, "print only the last N lines kept (default all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines, with times, and a marker at each restart")
	return cmd
}

// followLogs prints a followed log until it ends or ctx does (Ctrl-C,
// which is not an error here).
func followLogs(ctx context.Context, c *client.Client, out io.Writer, name string, tail int, asJSON bool) error {
	s, err := c.FollowLogs(ctx, name, tail)
	if err != nil {
		return err
	}
	defer s.Close()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return printStream(ctx, s.Next, nil, func(rec client.LogRecord) error {
		if !asJSON {
			_, err := io.WriteString(out, logRecordLine(rec)+"\n")
			return err
		}
		if rec.Event != nil {
			return enc.Encode(map[string]any{"event": rec.Event})
		}
		return enc.Encode(rec.Line)
	})
}

// logRecordLine renders one record of a followed log: a line read
// before the stream began as it is, a new line after the time it was
// read, a state change as a marker line.
func logRecordLine(rec client.LogRecord) string {
	if ev := rec.Event; ev != nil {
		return formatStamp(ev.At) + " --- " + describeEvent(ev)
	}
	if rec.Line.At == nil {
		return rec.Line.Line
	}
	return formatStamp(*rec.Line.At) + " " + rec.Line.Line
}

// formatStamp prints a time of a log or an event line, local, to the
// millisecond.
func formatStamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") }

// sandboxSummary says in one line how a server is sandboxed, or why not.
func sandboxSummary(s *sb.SandboxInfo) string {
	if !s.Enabled {
		return strings.TrimSpace("off " + orParens(s.Reason))
	}
	network := "network on"
	switch {
	case !s.Network:
		network = "network off"
	case len(s.NetworkAllowed) > 0:
		network = "network only to " + strings.Join(s.NetworkAllowed, ", ")
	case len(s.NetworkAllow) > 0:
		network = "network only to " + strings.Join(s.NetworkAllow, ", ")
	}
	parts := []string{network, "limits " + orDash(s.Limits)}
	if s.WorkspaceMode != "" {
		parts = append(parts, string(s.WorkspaceMode)+" workspace")
	}
	if len(s.Unenforced) > 0 {
		parts = append(parts, "not enforced here: "+strings.Join(s.Unenforced, ", "))
	}
	return "on (" + strings.Join(parts, "; ") + ")"
}

func orParens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}
