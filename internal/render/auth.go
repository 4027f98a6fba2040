package render

import (
	"context"
	"fmt"
	"io"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/browser"
)

// Authorize runs the OAuth authorization of the server name ("server
// auth"): it asks the daemon to start it, prints the URL to approve (on a
// page in the desktop's browser if open), and unless noWait waits for the
// daemon to hold the tokens and prints the outcome, to out or as JSON if
// asJSON.
func Authorize(ctx context.Context, c *client.Client, out, errOut io.Writer, name string, open, noWait, asJSON bool) error {
	start, err := c.StartAuth(ctx, name)
	if err != nil {
		return err
	}
	if asJSON && noWait {
		return JSON(out, start)
	}
	fmt.Fprintf(errOut, "Open this URL in a browser and approve (before %s):\n\n", start.ExpiresAt.Local().Format("15:04"))
	fmt.Fprintf(out, "%s\n", start.AuthorizationURL)
	if open {
		page, err := browser.Open(start.AuthorizationURL)
		if err != nil {
			fmt.Fprintf(errOut, "\ncould not open a browser (%v); open the URL yourself\n", err)
		}
		defer page.Remove(ctx)
	}
	if noWait {
		return nil
	}
	fmt.Fprintf(errOut, "\nwaiting for the approval...\n")
	st, err := c.WaitAuthorized(ctx, name, start.ExpiresAt)
	if err != nil {
		return err
	}
	if asJSON {
		return JSON(out, st)
	}
	fmt.Fprintf(out, "%s is authorized", name)
	if len(st.Scopes) > 0 {
		fmt.Fprintf(out, " (scopes %v)", st.Scopes)
	}
	fmt.Fprintln(out)
	return nil
}
