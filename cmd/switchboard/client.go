package main

// This file connects the client verbs (server, tools, call, import) to
// the daemon: it builds the API client from --addr and --token (or the
// credential serve generated for this user), and adds to the client's
// errors what a person at a terminal needs to fix them.

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

// clientFrom builds the client of a command from the persistent --addr
// and --daemon-uid flags and the --token flag (whose defaults come from
// SWITCHBOARD_ADDR, SWITCHBOARD_DAEMON_UID and SWITCHBOARD_TOKEN). The
// client sends nothing to a loopback address held by another uid than
// --daemon-uid's (default: this user's) or root's.
func clientFrom(cmd *cobra.Command) (*client.Client, error) {
	addr, token, err := daemonFrom(cmd)
	if err != nil {
		return nil, err
	}
	var o client.Options
	if s, _ := cmd.Flags().GetString("daemon-uid"); s != "" {
		uid, err := strconv.Atoi(s)
		if err != nil || uid < 0 {
			return nil, fmt.Errorf("--daemon-uid %q: want a uid (a number)", s)
		}
		o.DaemonUID = &uid
	}
	c, err := client.New(addr, token, &o)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	return c, nil
}

// daemonFrom returns the daemon's address and token as the command's
// flags (--addr, --token, --token-file), the environment and, for a
// daemon on loopback, this user's credential file give them
// (client.Target).
func daemonFrom(cmd *cobra.Command) (addr, token string, err error) {
	addr, _ = cmd.Flags().GetString("addr")
	token, _ = cmd.Flags().GetString("token")
	file, _ := cmd.Flags().GetString("token-file")
	return client.Target(addr, token, file)
}

// withClient runs fn with the command's client, closing it afterwards,
// and explains the error fn returns.
func withClient(cmd *cobra.Command, fn func(c *client.Client) error) error {
	c, err := clientFrom(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	return render.Explain(cmd.Context(), c, fn(c))
}

// clientVerb is the RunE of a client verb whose flags need no checking
// first: run gets the command's client (withClient).
func clientVerb(run func(cmd *cobra.Command, args []string, c *client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return withClient(cmd, func(c *client.Client) error { return run(cmd, args, c) })
	}
}

// checkDurations refuses a negative value of the duration flags named.
func checkDurations(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if d, _ := cmd.Flags().GetDuration(n); d < 0 {
			return fmt.Errorf("--%s must not be negative", n)
		}
	}
	return nil
}

// addTokenFlag adds --token to a client verb, or to every verb under it if
// persistent. Its default is read from SWITCHBOARD_TOKEN when the client
// is built, not here, so that --help never prints the token.
func addTokenFlag(cmd *cobra.Command, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.String("token", "", "bearer token of the API (default $SWITCHBOARD_TOKEN, else the credential \"switchboard serve\" generated for this user); every local user can read a command line: prefer --token-file or SWITCHBOARD_TOKEN")
	f.String("token-file", "", "read the bearer token from this file, which must be this user's and of mode 0600 (or stricter); instead of --token")
}

// output returns the command's output format: -o, or json for --json.
func output(cmd *cobra.Command) string {
	if v, _ := cmd.Flags().GetBool("json"); v {
		return render.FormatJSON
	}
	if f := cmd.Flags().Lookup("output"); f != nil {
		return f.Value.String()
	}
	return render.FormatText
}

// jsonOutput reports whether the command prints JSON (-o json or --json).
func jsonOutput(cmd *cobra.Command) bool { return output(cmd) == render.FormatJSON }

// show prints v, the API's answer, as JSON with -o json, else as text
// prints it.
func show(cmd *cobra.Command, v any, text func(out io.Writer)) error {
	if jsonOutput(cmd) {
		return render.JSON(cmd.OutOrStdout(), v)
	}
	text(cmd.OutOrStdout())
	return nil
}

// wideOutput reports whether the command prints every column, uncut
// (-o wide).
func wideOutput(cmd *cobra.Command) bool { return output(cmd) == render.FormatWide }

// resolvePaths makes cfg's relative command and cwd absolute against this
// process's directory, the user's (client.ResolvePaths), so that check and
// a daemon running elsewhere find the same file.
func resolvePaths(cfg *sb.ServerConfig) error {
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("resolving --command and --cwd: %w", err)
	}
	client.ResolvePaths(cfg, dir)
	return nil
}
