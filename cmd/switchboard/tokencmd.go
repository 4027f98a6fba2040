package main

// This file holds the "token" verbs: create, list and revoke, each one
// request to a running "switchboard serve".

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke scoped API tokens",
		Long: `An API token lets a client in with only the reach it needs, beside the
daemon's admin credential. Its scopes:

  admin          everything: the API and every MCP endpoint
  mcp            /mcp and /mcp/NAME: every server's tools
  toolset:NAME   /toolsets/NAME/mcp only

The secret (sbt_...) is shown once, when the token is created; the daemon
keeps only its hash. A revoked token stops working at once, on every
replica, open MCP sessions and streams included. Calls are counted by
token name in switchboard_token_calls_total.`,
		Example: `  switchboard token create coder-bot --scope toolset:coder
  switchboard token list
  switchboard token revoke coder-bot`,
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	addTokenFlag(cmd, true)
	cmd.AddCommand(newTokenCreateCommand(), newTokenListCommand(), newTokenRevokeCommand())
	return cmd
}

func newTokenCreateCommand() *cobra.Command {
	var scopes []string
	cmd := &cobra.Command{
		Use:   "create NAME --scope SCOPE...",
		Short: "Create a token and print its secret (once)",
		Long: `create makes a token with the scopes given and prints its secret, which
is not shown again: give it to the client now (Authorization: Bearer ...).`,
		Example: `  switchboard token create coder-bot --scope toolset:coder
  switchboard token create ci --scope mcp -o json | jq -r .token`,
		Args: cobra.ExactArgs(1),
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			ss := make([]sb.Scope, len(scopes))
			for i, s := range scopes {
				ss[i] = sb.Scope(s)
			}
			t, err := c.CreateToken(cmd.Context(), args[0], ss)
			if err != nil {
				return err
			}
			return show(cmd, t, func(out io.Writer) {
				fmt.Fprintf(cmd.ErrOrStderr(), "created token %s (%s); its secret, shown this once:\n", t.Name, render.Scopes(t.Scopes))
				fmt.Fprintln(out, t.Secret)
			})
		}),
	}
	cmd.Flags().StringArrayVar(&scopes, "scope", nil, `admin, mcp or toolset:NAME (repeatable)`)
	return cmd
}

func newTokenListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tokens (never their secrets)",
		Long:    `list prints one line per token: its scopes, when it was created and when it was last used (to within a minute).`,
		Example: `  switchboard token list`,
		Args:    cobra.NoArgs,
		RunE: clientVerb(func(cmd *cobra.Command, _ []string, c *client.Client) error {
			list, err := c.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			return show(cmd, api.TokenList{Tokens: list}, func(out io.Writer) { render.TokenList(out, list, time.Now()) })
		}),
	}
}

func newTokenRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "revoke NAME",
		Aliases:           []string{"rm"},
		Short:             "Revoke a token at once",
		Long:              `revoke deletes a token: it stops working at once, open MCP sessions and streams included.`,
		Example:           `  switchboard token revoke coder-bot`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTokenName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			return show(cmd, map[string]string{"revoked": args[0]}, func(out io.Writer) { fmt.Fprintf(out, "revoked %s\n", args[0]) })
		}),
	}
}
