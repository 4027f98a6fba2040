package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

// editFlags are the flags of "server edit" that "server add" has not:
// removing what add can only set.
type editFlags struct {
	unsetEnv, unsetHeaders  []string
	clearArgs, clearAllow   bool
	startup, call, maxTotal time.Duration
}

func newServerEditCommand() *cobra.Command {
	var (
		given sb.ServerConfig // what the flags of add say; only the flags given apply
		sf    serverFlags
		ef    editFlags
		wf    waitFlags
	)
	cmd := &cobra.Command{
		Use:   "edit NAME [--command CMD] [--arg A]... [--env K=V]... [--url URL] [--header K:V]... [--call-timeout D] ...",
		Short: "Change some settings of a server, keeping the rest and its secrets",
		Long: `edit changes what its flags name and keeps everything else: the other
arguments, env values and headers, the timeouts, and the stored secrets.
--env K=V and --header "K: V" set one value each (--unset-env K and
--unset-header K remove one); --arg replaces the whole argument list
(--clear-args empties it), --mount the sandbox's own mounts; --no-sandbox
runs it unsandboxed (--no-sandbox=false sandboxes it again); --oauth and
--oauth-* set one field of its OAuth block each; --command on a remote
server makes it a stdio server, --url on a stdio server a remote one.

Secrets (env and header values) stay as stored only while they go where
they went: an edit that changes the command, the arguments or the URL's
origin must give each of them again (--env K=V), or the daemon refuses it
naming the field. Relative paths are taken against this shell's directory,
as "server add" takes them. The derived mounts are worked out afresh from
the edited command and arguments (see "server add --help") and printed.

The edit is based on the version read: if someone changed the server in
between, nothing is changed and edit says so; run it again. A change of
anything but the call timeouts reconnects the server; with --wait, edit
waits for the new connection attempt and prints its outcome.`,
		Example: `  switchboard server edit github --call-timeout 2m
  switchboard server edit github --env GITHUB_TOKEN=$NEW_TOKEN --wait
  switchboard server edit docs --url https://example.com/v2/mcp --header "Authorization: Bearer $TOKEN"
  switchboard server edit docs --oauth
  switchboard server edit everything --arg -y --arg @modelcontextprotocol/server-everything@latest`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			edit, err := ef.edit(cmd, &sf, &given)
			if err != nil {
				return err
			}
			return withClient(cmd, func(c *client.Client) error {
				return wf.change(cmd, c, args[0], nil, true,
					func() (sb.ServerView, error) {
						v, err := c.EditServer(cmd.Context(), args[0], edit)
						return v, client.EditError(err)
					},
					func(v *sb.ServerView, waiting bool) string {
						if waiting {
							return fmt.Sprintf("edited %s (version %d)", v.Name, v.Version)
						}
						return fmt.Sprintf("edited %s (version %d, status %s)", v.Name, v.Version, v.Runtime.Status)
					})
			})
		},
	}
	f := cmd.Flags()
	sf.register(f, &given, "; stored as a secret")
	f.StringArrayVar(&ef.unsetEnv, "unset-env", nil, "stdio server: remove one environment variable K (repeat)")
	f.StringArrayVar(&ef.unsetHeaders, "unset-header", nil, "remote server: remove one header K (repeat)")
	f.BoolVar(&ef.clearArgs, "clear-args", false, "stdio server: remove every argument")
	f.BoolVar(&ef.clearAllow, "clear-allow", false, "stdio server: remove the network allowlist (every destination reachable again)")
	f.DurationVar(&ef.startup, "startup-timeout", 0, "how long one connection attempt may take (0: the default)")
	f.DurationVar(&ef.call, "call-timeout", 0, "per-request timeout of a tool call (0: the default, 60s)")
	f.DurationVar(&ef.maxTotal, "max-total", 0, "hard cap on one tool call, progress included (0: none)")
	wf.register(f)
	return cmd
}

// editFlagNames are the flags that change something.
var editFlagNames = []string{"command", "arg", "env", "cwd", "url", "header", "transport", "protocol",
	"unset-env", "unset-header", "clear-args", "allow", "clear-allow", "startup-timeout", "call-timeout", "max-total", "mount",
	"no-sandbox", "oauth", "oauth-grant", "oauth-client-id", "oauth-client-secret", "oauth-scope"}

// edit returns the change the flags given ask for, to apply to the
// server's config as read: only flags given on the command line count.
func (ef *editFlags) edit(cmd *cobra.Command, sf *serverFlags, given *sb.ServerConfig) (func(*sb.ServerConfig) error, error) {
	changed := cmd.Flags().Changed
	if !slices.ContainsFunc(editFlagNames, changed) {
		return nil, fmt.Errorf("nothing to change: give the flags of what to change (see \"server edit --help\")")
	}
	if changed("command") && changed("url") {
		return nil, fmt.Errorf("give --command or --url, not both")
	}
	if changed("arg") && ef.clearArgs {
		return nil, fmt.Errorf("give --arg or --clear-args, not both")
	}
	if changed("allow") && ef.clearAllow {
		return nil, fmt.Errorf("give --allow or --clear-allow, not both")
	}
	if sf.noSandbox && (changed("mount") || changed("allow")) {
		return nil, fmt.Errorf("--mount and --allow shape the sandbox, which --no-sandbox turns off; give one or the other")
	}
	if err := client.CheckAllow(sf.allow); err != nil {
		return nil, err
	}
	if err := checkDurations(cmd, "startup-timeout", "call-timeout", "max-total"); err != nil {
		return nil, err
	}
	env, headers, err := sf.pairs()
	if err != nil {
		return nil, err
	}
	mounts, err := client.ParseMounts(sf.mounts)
	if err != nil {
		return nil, err
	}
	// Paths are resolved here, in the user's directory; a relative
	// command is taken against a --cwd given with it, else against the
	// user's directory, never against the stored cwd (which the user may
	// not have in mind).
	if changed("command") || changed("cwd") {
		p := &sb.ServerConfig{Transport: sb.TransportStdio, Command: given.Command, Cwd: given.Cwd}
		if err := resolvePaths(p); err != nil {
			return nil, err
		}
		given.Command, given.Cwd = p.Command, p.Cwd
	}
	transport := sb.Transport(sf.transport)
	e := &client.ServerEdit{
		Command:         ifChanged(cmd, "command", &given.Command),
		URL:             ifChanged(cmd, "url", &given.URL),
		Transport:       ifChanged(cmd, "transport", &transport),
		Args:            ifChanged(cmd, "arg", &given.Args),
		Cwd:             ifChanged(cmd, "cwd", &given.Cwd),
		ProtocolVersion: ifChanged(cmd, "protocol", &given.ProtocolVersion),
		Mounts:          ifChanged(cmd, "mount", &mounts),
		Allow:           ifChanged(cmd, "allow", &sf.allow),
		NoSandbox:       ifChanged(cmd, "no-sandbox", &sf.noSandbox),
		Env:             env,
		Headers:         headers,
		UnsetEnv:        ef.unsetEnv,
		UnsetHeaders:    ef.unsetHeaders,
		OAuth:           sf.oauth.edit(cmd),
		StartupTimeout:  ifChanged(cmd, "startup-timeout", &ef.startup),
		CallTimeout:     ifChanged(cmd, "call-timeout", &ef.call),
		MaxTotalTimeout: ifChanged(cmd, "max-total", &ef.maxTotal),
	}
	if ef.clearArgs {
		e.Args = new([]string)
	}
	if ef.clearAllow {
		e.Allow = new([]string)
	}
	return func(cfg *sb.ServerConfig) error {
		if err := e.Apply(cfg); err != nil {
			return err
		}
		if changed("command") {
			render.WarnCommand(cmd.ErrOrStderr(), cfg)
		}
		return nil
	}, nil
}

// ifChanged returns v if the flag name was given on the command line,
// else nil: what a client.ServerEdit keeps as it is.
func ifChanged[T any](cmd *cobra.Command, name string, v *T) *T {
	if cmd.Flags().Changed(name) {
		return v
	}
	return nil
}
