package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

// completeToolsetName completes the one NAME of a toolset verb, each with
// its description.
func completeToolsetName(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if len(args) == 0 {
		askDaemon(cmd, func(ctx context.Context, c *client.Client) {
			list, err := c.Toolsets(ctx)
			if err != nil {
				return
			}
			for _, v := range list {
				if strings.HasPrefix(v.Name, toComplete) {
					out = append(out, cobra.CompletionWithDesc(v.Name, v.Description))
				}
			}
		})
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeTokenName completes the NAME of "token revoke", each with its
// scopes.
func completeTokenName(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if len(args) == 0 {
		askDaemon(cmd, func(ctx context.Context, c *client.Client) {
			list, err := c.Tokens(ctx)
			if err != nil {
				return
			}
			for _, t := range list {
				if strings.HasPrefix(t.Name, toComplete) {
					out = append(out, cobra.CompletionWithDesc(t.Name, render.Scopes(t.Scopes)))
				}
			}
		})
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
