package client

// This file holds the change "server edit" makes to a server's config:
// each field set changes one setting, and everything else is kept as
// read, stored secrets included (EditServer). Its errors name the flags
// of "server edit" that set the field, since a person at its command
// line reads them.

import (
	"fmt"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// ServerEdit is a change of a server's config. A nil field keeps the
// setting as it is.
type ServerEdit struct {
	// Command makes a remote server a stdio server of this command; URL
	// makes a stdio server a remote one of this URL.
	Command, URL         *string
	Transport            *sb.Transport
	Args                 *[]string // empty: no argument
	Cwd, ProtocolVersion *string
	Mounts               *[]sb.Mount // the sandbox's own; the daemon derives the others again
	Allow                *[]string   // the sandbox's network allowlist; empty: none
	NoSandbox            *bool

	// Env and Headers are values to set, UnsetEnv and UnsetHeaders the
	// keys to remove, each of which the server must have.
	Env, Headers           map[string]string
	UnsetEnv, UnsetHeaders []string

	OAuth *OAuthEdit

	StartupTimeout, CallTimeout, MaxTotalTimeout *time.Duration
}

// Apply changes cfg as e says.
func (e *ServerEdit) Apply(cfg *sb.ServerConfig) error {
	switch {
	case e.Command != nil:
		if !cfg.IsStdio() {
			cfg.Transport, cfg.URL, cfg.Headers = sb.TransportStdio, "", nil
		}
		cfg.Command = *e.Command
	case e.URL != nil:
		if cfg.IsStdio() {
			cfg.Transport, cfg.Command, cfg.Args, cfg.Env, cfg.Cwd = sb.TransportRemote, "", nil, nil, ""
		}
		cfg.URL = *e.URL
	}
	set(&cfg.Transport, e.Transport)
	set(&cfg.Args, e.Args)
	set(&cfg.Cwd, e.Cwd)
	set(&cfg.ProtocolVersion, e.ProtocolVersion)
	if e.Mounts != nil {
		if cfg.Sandbox == nil {
			cfg.Sandbox = &sb.SandboxConfig{}
		}
		cfg.Sandbox.Mounts = *e.Mounts
	}
	if e.Allow != nil {
		if err := editAllow(cfg, *e.Allow); err != nil {
			return err
		}
	}
	if e.NoSandbox != nil {
		if err := editNoSandbox(cfg, *e.NoSandbox); err != nil {
			return err
		}
	}
	if err := setPairs(&cfg.Env, e.Env, e.UnsetEnv, "--unset-env", "env variable"); err != nil {
		return err
	}
	if err := setPairs(&cfg.Headers, e.Headers, e.UnsetHeaders, "--unset-header", "header"); err != nil {
		return err
	}
	if err := e.OAuth.Apply(cfg); err != nil {
		return err
	}
	for _, t := range []struct {
		ms *int64
		d  *time.Duration
	}{{&cfg.StartupTimeoutMS, e.StartupTimeout}, {&cfg.CallTimeoutMS, e.CallTimeout}, {&cfg.MaxTotalTimeoutMS, e.MaxTotalTimeout}} {
		if t.d != nil {
			*t.ms = t.d.Milliseconds()
		}
	}
	return nil
}

// set sets *dst to *v unless v is nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// OAuthEdit is a change of a remote server's "oauth" block (the --oauth
// flags): a nil field keeps what the block says.
type OAuthEdit struct {
	Grant, ClientID, ClientSecret *string
	Scopes                        *[]string
}

// Apply gives cfg an oauth block if it has none and sets the fields of
// o; a nil o changes nothing.
func (o *OAuthEdit) Apply(cfg *sb.ServerConfig) error {
	if o == nil {
		return nil
	}
	if cfg.Transport == sb.TransportStdio {
		return fmt.Errorf("--oauth and --oauth-* are for --url servers")
	}
	if cfg.OAuth == nil {
		cfg.OAuth = &sb.OAuthConfig{}
	}
	set(&cfg.OAuth.Grant, o.Grant)
	set(&cfg.OAuth.ClientID, o.ClientID)
	set(&cfg.OAuth.ClientSecret, o.ClientSecret)
	set(&cfg.OAuth.Scopes, o.Scopes)
	return nil
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

// EditError adds to the daemon's refusal of an edit (EditServer) what to
// do about it.
func EditError(err error) error {
	switch sb.CodeOf(err) {
	case sb.CodeConflict:
		return fmt.Errorf("%w\n(nothing was changed: run the edit again to apply it to the server as it is now)", err)
	case sb.CodeInvalidConfig:
		if strings.Contains(err.Error(), `is "`+sb.SecretMask+`"`) {
			return fmt.Errorf("%w\n(the edit sends stored secrets back masked; with a new command, arguments or URL, give each again: --env K=V or --header \"K: V\")", err)
		}
	}
	return err
}
