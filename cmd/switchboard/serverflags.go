package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
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
	if cfg.Env, err = parseEnv(sf.env, os.LookupEnv); err != nil {
		return err
	}
	if cfg.Headers, err = parsePairs(sf.headers, ":", "--header"); err != nil {
		return err
	}
	if err := sf.oauth.apply(cmd, cfg); err != nil {
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
	cfg.Sandbox = &sb.SandboxConfig{}
	for _, m := range sf.mounts {
		mount, err := parseMount(m)
		if err != nil {
			return err
		}
		cfg.Sandbox.Mounts = append(cfg.Sandbox.Mounts, mount)
	}
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

// parseMount parses a --mount value, HOST[:PATH][:ro|rw]. A relative HOST
// is taken from the working directory, as a shell user would mean it.
func parseMount(v string) (sb.Mount, error) {
	parts := strings.Split(v, ":")
	var m sb.Mount
	if n := len(parts); n > 1 && (parts[n-1] == sb.MountReadOnly || parts[n-1] == sb.MountReadWrite) {
		m.Mode, parts = parts[n-1], parts[:n-1]
	}
	switch len(parts) {
	case 1:
	case 2:
		m.Path = parts[1]
	default:
		return m, fmt.Errorf("--mount %q: want HOST, HOST:PATH, HOST:ro|rw or HOST:PATH:ro|rw", v)
	}
	if parts[0] == "" {
		return m, fmt.Errorf("--mount %q: the host path is empty", v)
	}
	host, err := filepath.Abs(parts[0])
	if err != nil {
		return m, fmt.Errorf("--mount %q: %w", v, err)
	}
	m.Host = host
	return m, nil
}

// parseEnv parses the --env values: K=V, or a bare K, which takes the
// value of K in this command's own environment (lookup), as "docker run
// -e K" does: a secret given so is not on the command line, which every
// local user can read. A bare K that is not set is refused.
func parseEnv(pairs []string, lookup func(string) (string, bool)) (map[string]string, error) {
	var named []string
	for _, p := range pairs {
		k := strings.TrimSpace(p)
		if strings.Contains(p, "=") || k == "" {
			named = append(named, p)
			continue
		}
		v, ok := lookup(k)
		if !ok {
			return nil, fmt.Errorf("--env %s: %s is not set in this environment (give K=V, or set %s)", k, k, k)
		}
		named = append(named, k+"="+v)
	}
	return parsePairs(named, "=", "--env")
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
