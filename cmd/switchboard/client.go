package main

// This file connects the client verbs (server, tools, call, import) to
// the daemon: it builds the API client from --addr and --token (or the
// credential serve generated for this user), and adds to the client's
// errors what a person at a terminal needs to fix them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
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
// flags (--token, or --token-file's), the environment and, for a daemon
// on loopback, this user's
// credential file give them (client.CredentialFor). A credential file that
// cannot be trusted is an error, not a silent 401.
func daemonFrom(cmd *cobra.Command) (addr, token string, err error) {
	addr, _ = cmd.Flags().GetString("addr")
	if addr == "" {
		addr = os.Getenv(client.EnvAddr)
	}
	if addr == "" {
		addr = client.DefaultAddr
	}
	token, _ = cmd.Flags().GetString("token")
	if file, _ := cmd.Flags().GetString("token-file"); file != "" {
		if token != "" {
			return "", "", errors.New("--token and --token-file: pass one or the other")
		}
		if token, err = client.ReadTokenFile(file); err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
	}
	if token == "" {
		token = os.Getenv(client.EnvToken)
	}
	if token == "" {
		if token, err = client.CredentialFor(addr); err != nil {
			return "", "", err
		}
	}
	return addr, token, nil
}

// withClient runs fn with the command's client, closing it afterwards,
// and explains the error fn returns.
func withClient(cmd *cobra.Command, fn func(c *client.Client) error) error {
	c, err := clientFrom(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	return explain(cmd.Context(), c, fn(c))
}

// explain says what to do about an error of the client: an interrupted
// command says so, a refused connection most likely means the daemon is
// not running, and a 401 needs the daemon's credential.
func explain(ctx context.Context, c *client.Client, err error) error {
	var ae *client.Error
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach switchboard at %s: is \"switchboard serve\" running? (set --addr or SWITCHBOARD_ADDR if it listens elsewhere)", c.BaseURL())
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return fmt.Errorf("%w (HTTP 401: run this as the user who runs \"switchboard serve\": the CLI reads the credential serve generated from %s; or set SWITCHBOARD_TOKEN or pass --token with the daemon's token)", err, credentialHint())
	}
	return err
}

// credentialHint names this user's credential file for a message.
func credentialHint() string {
	if p, err := client.CredentialPath(); err == nil {
		return p
	}
	return "$XDG_CONFIG_HOME/" + client.CredentialFile
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

// outputFormat is the value of -o/--output: "text" (the default), "wide"
// or "json".
type outputFormat string

// The output formats.
const (
	outputText = "text"
	outputWide = "wide"
	outputJSON = "json"
)

func (o *outputFormat) String() string {
	if *o == "" {
		return outputText
	}
	return string(*o)
}

func (o *outputFormat) Set(v string) error {
	switch v {
	case outputText, outputWide, outputJSON:
		*o = outputFormat(v)
		return nil
	}
	return fmt.Errorf("want text, wide or json")
}

func (o *outputFormat) Type() string { return "format" }

// output returns the command's output format: -o, or json for --json.
func output(cmd *cobra.Command) string {
	if v, _ := cmd.Flags().GetBool("json"); v {
		return outputJSON
	}
	if f := cmd.Flags().Lookup("output"); f != nil {
		return f.Value.String()
	}
	return outputText
}

// jsonOutput reports whether the command prints JSON (-o json or --json).
func jsonOutput(cmd *cobra.Command) bool { return output(cmd) == outputJSON }

// wideOutput reports whether the command prints every column, uncut
// (-o wide).
func wideOutput(cmd *cobra.Command) bool { return output(cmd) == outputWide }

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
