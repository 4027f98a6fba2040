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
	return client.Sandbox(cfg, sf.mounts, sf.allow, sf.noSandbox)
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
