package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
	"github.com/switchboard-mcp/switchboard/registry"
)

// loadToolsetsAndTokens reads the toolsets and the API tokens of st, for
// serve and stdio.
func loadToolsetsAndTokens(ctx context.Context, st sb.Store, log *slog.Logger) (*registry.Toolsets, *registry.Tokens, error) {
	toolsets, err := registry.NewToolsets(st, log)
	if err != nil {
		return nil, nil, err
	}
	tokens, err := registry.NewTokens(st, log)
	if err != nil {
		return nil, nil, err
	}
	if err := toolsets.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	if err := tokens.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	return toolsets, tokens, nil
}

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
