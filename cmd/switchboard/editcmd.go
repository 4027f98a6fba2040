package main

import (
	"fmt"
	"slices"
	"strings"
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
						return v, editError(err)
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
	if err := checkAllow(sf.allow); err != nil {
		return nil, err
	}
	if err := checkDurations(cmd, "startup-timeout", "call-timeout", "max-total"); err != nil {
		return nil, err
	}
	env, headers, err := sf.pairs()
	if err != nil {
		return nil, err
	}
	mounts, err := sf.parseMounts()
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
	return func(cfg *sb.ServerConfig) error {
		switch {
		case changed("command"):
			if !cfg.IsStdio() {
				cfg.Transport, cfg.URL, cfg.Headers = sb.TransportStdio, "", nil
			}
			cfg.Command = given.Command
		case changed("url"):
			if cfg.IsStdio() {
				cfg.Transport, cfg.Command, cfg.Args, cfg.Env, cfg.Cwd = sb.TransportRemote, "", nil, nil, ""
			}
			cfg.URL = given.URL
		}
		if changed("transport") {
			cfg.Transport = sb.Transport(sf.transport)
		}
		if changed("arg") {
			cfg.Args = given.Args
		}
		if ef.clearArgs {
			cfg.Args = nil
		}
		if changed("cwd") {
			cfg.Cwd = given.Cwd
		}
		if changed("protocol") {
			cfg.ProtocolVersion = given.ProtocolVersion
		}
		if changed("mount") {
			// The mounts given replace the config's own; the derived
			// ones are the daemon's to work out again.
			if cfg.Sandbox == nil {
				cfg.Sandbox = &sb.SandboxConfig{}
			}
			cfg.Sandbox.Mounts = mounts
		}
		if changed("allow") || ef.clearAllow {
			if err := editAllow(cfg, sf.allow); err != nil {
				return err
			}
		}
		if changed("no-sandbox") {
			if err := editNoSandbox(cfg, sf.noSandbox); err != nil {
				return err
			}
		}
		if err := setPairs(&cfg.Env, env, ef.unsetEnv, "--unset-env", "env variable"); err != nil {
			return err
		}
		if err := setPairs(&cfg.Headers, headers, ef.unsetHeaders, "--unset-header", "header"); err != nil {
			return err
		}
		if err := sf.oauth.apply(cmd, cfg); err != nil {
			return err
		}
		if changed("startup-timeout") {
			cfg.StartupTimeoutMS = ef.startup.Milliseconds()
		}
		if changed("call-timeout") {
			cfg.CallTimeoutMS = ef.call.Milliseconds()
		}
		if changed("max-total") {
			cfg.MaxTotalTimeoutMS = ef.maxTotal.Milliseconds()
		}
		if changed("command") {
			render.WarnCommand(cmd.ErrOrStderr(), cfg)
		}
		return nil
	}, nil
}

// editAllow replaces the network allowlist of cfg's sandbox with allow;
// an empty allow removes it.
func editAllow(cfg *sb.ServerConfig, allow []string) error {
	if !cfg.IsStdio() {
		return fmt.Errorf("--allow and --clear-allow are for stdio servers; a remote server runs elsewhere")
	}
	if len(allow) == 0 {
		if cfg.Sandbox != nil && cfg.Sandbox.Network != nil && len(cfg.Sandbox.Network.Allow) > 0 {
			cfg.Sandbox.Network = nil
		}
		return nil
	}
	if cfg.Sandbox == nil {
		cfg.Sandbox = &sb.SandboxConfig{}
	}
	cfg.Sandbox.Network = &sb.SandboxNetwork{Allow: allow}
	return nil
}

// editNoSandbox turns cfg's sandbox off (--no-sandbox) or back on
// (--no-sandbox=false), keeping its mounts and allowlist for when it is on.
func editNoSandbox(cfg *sb.ServerConfig, off bool) error {
	if !cfg.IsStdio() {
		return fmt.Errorf("--no-sandbox is for stdio servers; a remote server runs elsewhere")
	}
	if cfg.Sandbox == nil {
		cfg.Sandbox = &sb.SandboxConfig{}
	}
	cfg.Sandbox.Enabled = nil
	if off {
		cfg.Sandbox.Enabled = new(false)
	}
	return nil
}

// setPairs sets the values of set in *m and removes the keys of unset,
// each of which must be there.
func setPairs(m *map[string]string, set map[string]string, unset []string, flag, what string) error {
	for _, k := range unset {
		if _, ok := (*m)[k]; !ok {
			return fmt.Errorf("%s %s: the server has no %s %s", flag, k, what, k)
		}
		delete(*m, k)
	}
	if len(set) > 0 && *m == nil {
		*m = map[string]string{}
	}
	for k, v := range set {
		(*m)[k] = v
	}
	return nil
}

// editError adds to the daemon's refusal of an edit what to do about it.
func editError(err error) error {
	switch sb.CodeOf(err) {
	case sb.CodeConflict:
		return fmt.Errorf("%w\n(nothing was changed: run the edit again to apply it to the server as it is now)", err)
	case sb.CodeInvalidConfig:
		if strings.Contains(err.Error(), `is "***"`) {
			return fmt.Errorf("%w\n(the edit sends stored secrets back masked; with a new command, arguments or URL, give each again: --env K=V or --header \"K: V\")", err)
		}
	}
	return err
}
