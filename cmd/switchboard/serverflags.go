package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
)

// serverFlags are the flags that say how to reach a server, shared by
// check and server add: a command (stdio) or a URL (remote), with their
// arguments, environment, headers and protocol, and a command's sandbox.
type serverFlags struct {
	env, headers []string
	transport    string
	mounts       []string
	allow        []string
	noSandbox    bool
	oauth        oauthFlags // authcmd.go
}

// register adds the flags to f, writing into cfg. secretNote is appended
// to the help of --env and --header.
func (sf *serverFlags) register(f *pflag.FlagSet, cfg *sb.ServerConfig, secretNote string) {
	f.StringVar(&cfg.Command, "command", "", "stdio server: the command to run (no shell)")
	f.StringArrayVar(&cfg.Args, "arg", nil, "stdio server: one argument (repeat)")
	f.StringArrayVar(&sf.env, "env", nil, "stdio server: one environment variable K=V, or K alone for the value of K in this command's environment, off the command line (repeat"+secretNote+")")
	f.StringVar(&cfg.Cwd, "cwd", "", "stdio server: working directory")
	f.StringVar(&cfg.URL, "url", "", "remote server: the MCP endpoint URL")
	f.StringArrayVar(&sf.headers, "header", nil, `remote server: one header "K: V" (repeat`+secretNote+")")
	f.StringVar(&sf.transport, "transport", string(sb.TransportRemote), "remote server: remote, streamable-http or sse")
	f.StringVar(&cfg.ProtocolVersion, "protocol", "", `protocol version to pin, e.g. "2025-11-25" (default: auto)`)
	f.StringArrayVar(&sf.mounts, "mount", nil,
		`stdio server: a host path its sandbox may see, HOST[:PATH][:ro|rw] (read-only unless rw; repeat); `+
			`HOST:rw widens a derived mount of HOST`)
	f.StringArrayVar(&sf.allow, "allow", nil,
		`stdio server: a destination its sandbox may reach, HOST[:PORT], IP[:PORT] or CIDR[:PORT]; every other one is refused (repeat)`)
	f.BoolVar(&sf.noSandbox, "no-sandbox", false, `stdio server: run it unsandboxed ("sandbox": {"enabled": false})`)
	sf.oauth.register(f, secretNote)
}

// apply sets cfg's transport, env and headers from the flags, refusing
// combinations that cannot work.
func (sf *serverFlags) apply(cmd *cobra.Command, cfg *sb.ServerConfig) error {
	switch {
	case cfg.Command != "" && cfg.URL != "":
		return fmt.Errorf("give --command or --url, not both")
	case cfg.Command != "":
		if cmd.Flags().Changed("transport") && sf.transport != string(sb.TransportStdio) {
			return fmt.Errorf("--transport %s is for --url servers; a --command server is stdio", sf.transport)
		}
		cfg.Transport = sb.TransportStdio
	case cfg.URL != "":
		cfg.Transport = sb.Transport(sf.transport)
	default:
		return fmt.Errorf("give --command (a stdio server) or --url (a remote server)")
	}
	var err error
	if cfg.Env, cfg.Headers, err = sf.pairs(); err != nil {
		return err
	}
	if err := sf.oauth.edit(cmd).Apply(cfg); err != nil {
		return err
	}
	return sf.applySandbox(cfg)
}

// applySandbox sets cfg's sandbox from --mount, --allow and --no-sandbox.
// Without any of them the config has no sandbox field: the default
// profile.
func (sf *serverFlags) applySandbox(cfg *sb.ServerConfig) error {
	switch {
	case len(sf.mounts) == 0 && len(sf.allow) == 0 && !sf.noSandbox:
		return nil
	case cfg.Transport != sb.TransportStdio:
		return fmt.Errorf("--mount, --allow and --no-sandbox are for --command servers; a remote server runs elsewhere")
	case sf.noSandbox && len(sf.mounts) > 0:
		return fmt.Errorf("--mount makes a host path visible in the sandbox, which --no-sandbox turns off; give one or the other")
	case sf.noSandbox && len(sf.allow) > 0:
		return fmt.Errorf("--allow limits what the sandbox reaches, which --no-sandbox turns off; give one or the other")
	case sf.noSandbox:
		cfg.Sandbox = &sb.SandboxConfig{Enabled: new(false)}
		return nil
	}
	mounts, err := sf.parseMounts()
	if err != nil {
		return err
	}
	cfg.Sandbox = &sb.SandboxConfig{Mounts: mounts}
	if err := checkAllow(sf.allow); err != nil {
		return err
	}
	if len(sf.allow) > 0 {
		cfg.Sandbox.Network = &sb.SandboxNetwork{Allow: sf.allow}
	}
	return nil
}

// checkAllow refuses an --allow value the daemon would refuse, here,
// naming the flag.
func checkAllow(allow []string) error {
	for _, a := range allow {
		if _, err := sb.ParseNetworkAllow(a); err != nil {
			return fmt.Errorf("--allow %v", err)
		}
	}
	return nil
}

// pairs parses --env and --header (client.ParseEnv, client.ParsePairs).
func (sf *serverFlags) pairs() (env, headers map[string]string, err error) {
	if env, err = client.ParseEnv(sf.env, os.LookupEnv); err != nil {
		return nil, nil, fmt.Errorf("--env %w", err)
	}
	if headers, err = client.ParsePairs(sf.headers, ":"); err != nil {
		return nil, nil, fmt.Errorf("--header %w", err)
	}
	return env, headers, nil
}

// parseMounts parses the --mount values (client.ParseMount).
func (sf *serverFlags) parseMounts() ([]sb.Mount, error) {
	return parseAll("--mount", sf.mounts, client.ParseMount)
}

// parseAll parses the values of a repeated flag, naming it in an error.
func parseAll[T any](flag string, values []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s %w", flag, err)
		}
		out = append(out, x)
	}
	return out, nil
}
