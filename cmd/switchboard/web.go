package main

// This file holds "web": it asks the running serve for a one-time login
// code of its web page, with this user's credential, and prints (and
// opens) the link.

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/browser"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newWebCommand() *cobra.Command {
	var noOpen bool
	cmd := &cobra.Command{
		Use:   "web [--no-open]",
		Short: "Open the web page of the running switchboard, logged in",
		Long: `web asks "switchboard serve" for a one-time login link of its web page and
opens it in a browser (when there is a desktop to open it on), and prints it
on stdout.

The link works once, within two minutes: opening it gives the browser a
session (an HttpOnly, SameSite=Strict cookie and a token the page keeps)
for 12 hours, or until serve restarts. Asking for a link takes the daemon's
credential, so run this as the user who runs serve (or pass --token).

The browser is opened on a page in a file only this user can read, which
sends it on to the link: the link is never on a command line, where every
user of the host could read it. The file is removed a few seconds after
the browser took it.`,
		Example: `  switchboard web
  switchboard web --no-open --addr http://127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: clientVerb(func(cmd *cobra.Command, _ []string, c *client.Client) error {
			lc, err := c.LoginCode(cmd.Context())
			if err != nil {
				return err
			}
			link := c.BaseURL() + lc.Path
			if jsonOutput(cmd) {
				return render.JSON(cmd.OutOrStdout(), map[string]any{"url": link, "expires_at": lc.ExpiresAt})
			}
			fmt.Fprintln(cmd.OutOrStdout(), link)
			left := time.Until(lc.ExpiresAt).Round(time.Second)
			fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: the link logs one browser in, once, within %s\n", left)
			if !noOpen {
				page, err := browser.Open(link)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: not opening a browser (%v): open the link yourself\n", err)
				}
				page.Remove(cmd.Context())
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the link only; do not open a browser")
	addTokenFlag(cmd, false)
	return cmd
}
