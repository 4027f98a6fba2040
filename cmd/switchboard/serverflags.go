package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
)

// serverFlags are the flags that say how to reach a server, shared by
// check and server add: a command (stdio) or a URL (remote), with their
// arguments, environment, headers and protocol.
type serverFlags struct {
	env, headers []string
	transport    string
}

// register adds the flags to f, writing into cfg. secretNote is appended
// to the help of --env and --header.
func (sf *serverFlags) register(f *pflag.FlagSet, cfg *sb.ServerConfig, secretNote string) {
	f.StringVar(&cfg.Command, "command", "", "stdio server: the command to run (no shell)")
	f.StringArrayVar(&cfg.Args, "arg", nil, "stdio server: one argument (repeat)")
	f.StringArrayVar(&sf.env, "env", nil, "stdio server: one environment variable K=V (repeat"+secretNote+")")
	f.StringVar(&cfg.Cwd, "cwd", "", "stdio server: working directory")
	f.StringVar(&cfg.URL, "url", "", "remote server: the MCP endpoint URL")
	f.StringArrayVar(&sf.headers, "header", nil, `remote server: one header "K: V" (repeat`+secretNote+")")
	f.StringVar(&sf.transport, "transport", string(sb.TransportRemote), "remote server: remote, streamable-http or sse")
	f.StringVar(&cfg.ProtocolVersion, "protocol", "", `protocol version to pin, e.g. "2025-11-25" (default: auto)`)
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
	if cfg.Env, err = parsePairs(sf.env, "=", "--env"); err != nil {
		return err
	}
	cfg.Headers, err = parsePairs(sf.headers, ":", "--header")
	return err
}

// parsePairs parses "K<sep>V" flag values into a map.
func parsePairs(pairs []string, sep, flag string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want K%sV", flag, p, sep)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}
