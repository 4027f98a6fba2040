package main

// This file completes server names and tool addresses in the shell
// (cobra's dynamic completion: "switchboard completion bash|zsh|fish"
// prints the script), asking the running daemon. Without a daemon nothing
// is completed, and file names are never offered instead.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

// completeTimeout bounds a completion's questions to the daemon: a shell
// waiting on Tab must not hang.
const completeTimeout = 2 * time.Second

// completeServerName completes the one NAME of a server verb, with its
// status; completeToolsetName that of a toolset verb, with its
// description; completeTokenName that of "token revoke", with its scopes.
var (
	completeServerName  = completeName(false, (*client.Client).Servers, func(v sb.ServerView) (string, string) { return v.Name, string(v.Runtime.Status) })
	completeToolsetName = completeName(false, (*client.Client).Toolsets, func(v api.ToolsetView) (string, string) { return v.Name, v.Description })
	completeTokenName   = completeName(false, (*client.Client).Tokens, func(t sb.Token) (string, string) { return t.Name, render.Scopes(t.Scopes) })
)

// completeServerNames completes server names not given yet, each with its
// status (events takes several).
var completeServerNames = completeName(true, (*client.Client).Servers, func(v sb.ServerView) (string, string) { return v.Name, string(v.Runtime.Status) })

// completeName completes a NAME from the daemon's list, each with its
// description (of says both): the one NAME of a verb, or, if many, every
// name not given yet.
func completeName[T any](many bool, list func(*client.Client, context.Context) ([]T, error), of func(T) (name, desc string)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		askDaemon(cmd, func(ctx context.Context, c *client.Client) {
			items, err := list(c, ctx)
			if err != nil {
				return
			}
			for _, v := range items {
				if name, desc := of(v); strings.HasPrefix(name, toComplete) && !slices.Contains(args, name) {
					out = append(out, cobra.CompletionWithDesc(name, desc))
				}
			}
		})
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeToolAddress completes the SERVER/TOOL of "call": server names
// followed by "/" until one is chosen, then that server's tools.
func completeToolAddress(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	server, _, chosen := strings.Cut(toComplete, "/")
	var out []cobra.Completion
	directive := cobra.ShellCompDirectiveNoFileComp
	askDaemon(cmd, func(ctx context.Context, c *client.Client) {
		if !chosen {
			servers, err := c.Servers(ctx)
			if err != nil {
				return
			}
			for _, v := range servers {
				if strings.HasPrefix(v.Name, server) {
					out = append(out, cobra.CompletionWithDesc(v.Name+"/", string(v.Runtime.Status)))
				}
			}
			directive |= cobra.ShellCompDirectiveNoSpace
			return
		}
		tools, err := c.ServerTools(ctx, server)
		if err != nil {
			return
		}
		for _, t := range tools {
			if strings.HasPrefix(t.Address, toComplete) {
				out = append(out, cobra.CompletionWithDesc(t.Address, render.FirstLine(t.Description, 60)))
			}
		}
	})
	return out, directive
}

// askDaemon runs fn with the command's client and a short deadline; a
// daemon that cannot be reached completes nothing.
func askDaemon(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client)) {
	c, err := clientFrom(cmd)
	if err != nil {
		return
	}
	defer c.Close()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	fn(ctx, c)
}
