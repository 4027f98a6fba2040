package render

// This file adds to the errors of the client verbs what a person at a
// terminal needs to fix them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/switchboard-mcp/switchboard/client"
)

// Explain says what to do about an error of the client: an interrupted
// command says so, a refused connection most likely means the daemon is
// not running, and a 401 needs the daemon's credential.
func Explain(ctx context.Context, c *client.Client, err error) error {
	var ae *client.Error
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach switchboard at %s: is \"switchboard serve\" running? (set --addr or SWITCHBOARD_ADDR if it listens elsewhere)", c.BaseURL())
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return fmt.Errorf("%w (HTTP 401: run this as the user who runs \"switchboard serve\": the CLI reads the credential serve generated from %s; or set SWITCHBOARD_TOKEN or pass --token with the daemon's token)", err, CredentialHint())
	}
	return err
}

// CredentialHint names this user's credential file for a message.
func CredentialHint() string {
	if p, err := client.CredentialPath(); err == nil {
		return p
	}
	return "$XDG_CONFIG_HOME/" + client.CredentialFile
}
