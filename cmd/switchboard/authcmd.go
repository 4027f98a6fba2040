package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newServerAuthCommand() *cobra.Command {
	var open, noWait, logout bool
	cmd := &cobra.Command{
		Use:   "auth NAME",
		Short: "Authorize a server that requires OAuth (opens the approval page)",
		Long: `auth authorizes Switchboard to use a remote server that requires OAuth (its
config has an "oauth" block; most hosted MCP servers do). Until then the
server stays in error with phase auth, without retrying in a loop.

auth asks the daemon to start the authorization: the daemon discovers the
server's authorization server, registers itself as a client if it has not
yet (the client is kept and reused), and returns a URL. Open it in a
browser (--open does) and approve; the authorization server then sends
the browser back to the daemon at /api/v1/servers/NAME/oauth/callback on
the address this command uses (--addr), so that address must be reachable
from the browser (with a client registered by hand, --oauth-client-id,
register that URL as its redirect URI). Behind a load balancer, the
callback may reach any replica on the same database. The daemon stores
the tokens encrypted, refreshes them on its own, and reconnects the
server, on every replica; auth waits for that and prints the outcome
(--no-wait returns at once).

Run it again whenever the server is back in phase auth: the refresh token
was revoked or expired, the authorization server forgot the registered
client, or the server asks for more scopes (the next authorization
requests them). --logout forgets the stored tokens and client.

--open gives the browser a page in a file only this user can read, which
sends it on to the URL: the URL (its state) is never on a command line,
where every user of the host could read it and complete the flow first.`,
		Example: `  switchboard server auth github
  switchboard server auth github --open
  switchboard server auth github --logout`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			name := args[0]
			out := cmd.OutOrStdout()
			if logout {
				if err := c.ForgetAuth(cmd.Context(), name); err != nil {
					return err
				}
				fmt.Fprintf(out, "forgot the OAuth tokens of %s\n", name)
				return nil
			}
			return render.Authorize(cmd.Context(), c, out, cmd.ErrOrStderr(), name, open, noWait, jsonOutput(cmd))
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&open, "open", false, "open the URL in the desktop's browser")
	f.BoolVar(&noWait, "no-wait", false, "print the URL and return; do not wait for the approval")
	f.BoolVar(&logout, "logout", false, "forget the stored tokens instead (the server needs authorizing again)")
	return cmd
}

// oauthFlags are the flags of a remote server's "oauth" block.
type oauthFlags struct {
	on                      bool
	grant, clientID, secret string
	scopes                  []string
}

func (of *oauthFlags) register(f *pflag.FlagSet, secretNote string) {
	f.BoolVar(&of.on, "oauth", false, `remote server: it requires OAuth (authorize it with "server auth NAME"); implied by the other --oauth-* flags`)
	f.StringVar(&of.grant, "oauth-grant", "", "remote server: authorization_code (default) or client_credentials (machine to machine)")
	f.StringVar(&of.clientID, "oauth-client-id", "", "remote server: a client id registered with the authorization server")
	f.StringVar(&of.secret, "oauth-client-secret", "", "remote server: the client's secret (with --oauth-client-id"+secretNote+")")
	f.StringArrayVar(&of.scopes, "oauth-scope", nil, "remote server: a scope to request (repeat; default: what the server asks for)")
}

// edit returns the change of the oauth block the --oauth flags given ask
// for, keeping what they do not mention (server edit changes one field at
// a time); nil if none was given.
func (of *oauthFlags) edit(cmd *cobra.Command) *client.OAuthEdit {
	if !slices.ContainsFunc([]string{"oauth", "oauth-grant", "oauth-client-id", "oauth-client-secret", "oauth-scope"}, cmd.Flags().Changed) {
		return nil
	}
	return &client.OAuthEdit{Grant: ifChanged(cmd, "oauth-grant", &of.grant), ClientID: ifChanged(cmd, "oauth-client-id", &of.clientID),
		ClientSecret: ifChanged(cmd, "oauth-client-secret", &of.secret), Scopes: ifChanged(cmd, "oauth-scope", &of.scopes)}
}

// registerOAuthKeyFlag adds --oauth-key-file, shared by serve and stdio.
func registerOAuthKeyFlag(f *pflag.FlagSet, keyFile *string) {
	f.StringVar(keyFile, "oauth-key-file", os.Getenv("SWITCHBOARD_OAUTH_KEY_FILE"),
		"the key that encrypts stored OAuth tokens, created (0600) if missing; refused if others may read it or another user owns it; replicas need the same file "+
			"(env SWITCHBOARD_OAUTH_KEY_FILE; default: oauth.key next to the SQLite database, or next to the credential file)")
}
