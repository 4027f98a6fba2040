package daemon

// This file decides how serve lets clients in: which credential it
// requires, whether it may listen where it was told to without one, and
// which Host names requests may carry. Whoever gets past these can run any
// command as the daemon's user (a stdio server is a command), so every
// default refuses, and turning a check off takes a flag that says so.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/switchboard-mcp/switchboard/client"
)

// InsecureNoAuthFlag is the flag that turns the credential off. Its name
// is meant to be read aloud in a review of a unit file.
const InsecureNoAuthFlag = "insecure-no-auth"

// Auth is the credential serve requires.
type Auth struct {
	Token     string // "" only with --insecure-no-auth
	Insecure  bool   // --insecure-no-auth
	File      string // the credential file the token was read from, if it was
	Generated bool   // the file was created by this start
}

// AuthFrom decides the credential: --token (or the token read from
// --token-file), else $SWITCHBOARD_TOKEN, else
// the credential file at credentialPath() (generated if missing, refused
// if not private); none only with --insecure-no-auth, which a token
// contradicts.
func AuthFrom(flagToken, envToken string, insecureNoAuth bool, credentialPath func() (string, error)) (Auth, error) {
	switch {
	case insecureNoAuth && (flagToken != "" || envToken != ""):
		return Auth{}, fmt.Errorf("--%s contradicts the token given with --token, --token-file or SWITCHBOARD_TOKEN: pass one or the other", InsecureNoAuthFlag)
	case insecureNoAuth:
		return Auth{Insecure: true}, nil
	case flagToken != "":
		return Auth{Token: flagToken}, nil
	case envToken != "":
		return Auth{Token: envToken}, nil
	}
	orElse := fmt.Sprintf("pass --token (or set SWITCHBOARD_TOKEN), or --%s to require none", InsecureNoAuthFlag)
	path, err := credentialPath()
	if err != nil {
		return Auth{}, fmt.Errorf("refusing to serve without a credential: %v (set $XDG_CONFIG_HOME or $HOME, where serve keeps the one it generates); or %s", err, orElse)
	}
	tok, generated, err := client.LoadOrCreateCredential(path)
	if err != nil {
		if errors.Is(err, client.ErrUntrustedCredential) {
			return Auth{}, err // says what to do
		}
		return Auth{}, fmt.Errorf("refusing to serve without a credential: %w; fix that, or %s", err, orElse)
	}
	return Auth{Token: tok, File: path, Generated: generated}, nil
}

// exposure decides whether serve may listen, on loopback or not, with the
// credential it has, and what it must warn about. Without a credential it
// refuses unless --insecure-no-auth says so (authFrom gives none
// otherwise; this is the rule stated where the listener is known).
func exposure(loopback bool, a Auth) (warning string, err error) {
	switch {
	case a.Token != "":
		return "", nil
	case !a.Insecure && loopback:
		return "", fmt.Errorf("refusing to serve without a credential: any local user could run any command as this user; pass --token, or --%s", InsecureNoAuthFlag)
	case !a.Insecure:
		return "", fmt.Errorf("refusing to listen on a non-loopback address without a credential: anyone who can reach it could run any command as this user; pass --token, or --%s", InsecureNoAuthFlag)
	case loopback:
		return fmt.Sprintf("serving without a credential (--%s): any local user can run any command as this user (uid %d)",
			InsecureNoAuthFlag, os.Geteuid()), nil
	default:
		return fmt.Sprintf("listening on a non-loopback address without a credential (--%s): anyone who can reach it can run any command as this user (uid %d)",
			InsecureNoAuthFlag, os.Geteuid()), nil
	}
}

// HostsAllowed checks the --allowed-host entries (host names or IP
// addresses, no port or scheme; "*" for any) and adds the host of --listen
// when it is a name: serve answers to the name it was told to listen on.
func HostsAllowed(entries []string, listen string) ([]string, error) {
	var out []string
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case strings.ContainsAny(e, "/@?# "):
			return nil, fmt.Errorf("--allowed-host %q: want a host name or IP address, without a scheme or path", e)
		}
		if _, _, err := net.SplitHostPort(e); err == nil {
			return nil, fmt.Errorf("--allowed-host %q: want a host name without a port (any port is allowed)", e)
		}
		out = append(out, e)
	}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" && net.ParseIP(host) == nil {
		out = append(out, host)
	}
	return out, nil
}

// TokenFromFlags returns the token of --token or --token-file (at most one
// may be given), and a warning when it came from --token: a command line
// is readable by every local user (/proc/PID/cmdline, ps).
func TokenFromFlags(flagToken, tokenFile string) (token, warning string, err error) {
	switch {
	case flagToken != "" && tokenFile != "":
		return "", "", errors.New("--token and --token-file: pass one or the other")
	case tokenFile != "":
		tok, err := client.ReadTokenFile(tokenFile)
		if err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
		return tok, "", nil
	case flagToken != "":
		return flagToken, "--token is on serve's command line, where every local user can read it (ps, /proc/PID/cmdline): pass --token-file (a file of mode 0600) or SWITCHBOARD_TOKEN instead", nil
	}
	return "", "", nil
}
