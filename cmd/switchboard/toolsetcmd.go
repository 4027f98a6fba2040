package main

// This file holds the "toolset" verbs: add, update, list, show and rm,
// each one request to a running "switchboard serve".

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newToolsetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "toolset",
		Short: "Define which tools, prompts and resources each client sees",
		Long: `A toolset is a named selection of tools, prompts and resources of one or
more servers, served at /toolsets/NAME/mcp (and by "switchboard stdio
--toolset NAME"). Its clients can list, call, read and complete what it
selects and nothing else, whatever name they try. Give a client a token
that reaches only its toolset: "switchboard token create NAME --scope
toolset:NAME".

Items are picked by exact name or by pattern ('*' is any run of
characters), and exposed as "<server>__<name>" unless renamed. A JSON file
(-f) can also set descriptions and annotations; a selector names its item
in "tool", for prompts too:

  {"name": "coder",
   "tools": [{"server": "github", "tool": "search_*"},
             {"server": "fs", "tool": "read_file", "as": "read",
              "description": "Read a file of the repository.",
              "annotations": {"readOnlyHint": true}}],
   "prompts": [{"server": "github", "tool": "review"}],
   "resources": [{"server": "fs", "uri": "file:///repo/*"}]}

--mode search (or "mode": "search") makes the endpoint list two tools
instead, search_tools and call_tool, through which a client finds the
selected tools by a query and calls them (docs/tool-search.md).`,
		Example: `  switchboard toolset add coder --tool github/search_* --tool fs/read_file=read
  switchboard toolset add everything --tool '*/*' --mode search
  switchboard toolset add support -f support.json
  switchboard toolset list`,
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	addTokenFlag(cmd, true)
	cmd.AddCommand(newToolsetAddCommand(false), newToolsetAddCommand(true), newToolsetListCommand(),
		newToolsetShowCommand(), newToolsetRmCommand())
	return cmd
}

// registerToolsetSpec adds the flags of "toolset add" and "update",
// writing into s.
func registerToolsetSpec(cmd *cobra.Command, s *client.ToolsetSpec) {
	fl := cmd.Flags()
	fl.StringVarP(&s.File, "file", "f", "", "read the toolset as JSON from this file (- for stdin)")
	fl.StringVar(&s.Description, "description", "", "what the toolset is for")
	fl.StringVar(&s.Mode, "mode", "", `"search": its endpoint lists search_tools and call_tool instead of the tools (default "catalog": every tool listed)`)
	fl.StringArrayVar(&s.Tools, "tool", nil, "SERVER/TOOL[=EXPOSED]: a tool, or a pattern such as github/search_* (repeatable)")
	fl.StringArrayVar(&s.Prompts, "prompt", nil, "SERVER/PROMPT[=EXPOSED]: a prompt or pattern (repeatable)")
	fl.StringArrayVar(&s.Resources, "resource", nil, "SERVER/URI: a resource (or template) URI or pattern, such as fs/file:///repo/* (repeatable)")
}

func newToolsetAddCommand(update bool) *cobra.Command {
	var spec client.ToolsetSpec
	use, short, long := "add NAME (--tool SERVER/TOOL[=EXPOSED]... | -f FILE)", "Create a toolset",
		`add creates a toolset; its endpoint /toolsets/NAME/mcp serves it at once.
A toolset whose exposed names would collide is refused, naming the field.`
	if update {
		use, short, long = "update NAME (--tool SERVER/TOOL[=EXPOSED]... | -f FILE)", "Replace a toolset",
			`update replaces a toolset with the one the flags or the file describe; its
open sessions see the change (list_changed) at once.`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		// A new name for add; an existing one for update.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if update {
				return completeToolsetName(cmd, args, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := spec.Toolset(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			return withClient(cmd, func(c *client.Client) error {
				var v api.ToolsetView
				var err error
				if update {
					v, err = c.UpdateToolset(cmd.Context(), args[0], ts, 0)
				} else {
					v, err = c.CreateToolset(cmd.Context(), ts)
				}
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return render.JSON(cmd.OutOrStdout(), v)
				}
				verb := "added"
				if update {
					verb = "updated"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s toolset %s (version %d), served at /toolsets/%s/mcp\n", verb, v.Name, v.Version, v.Name)
				return nil
			})
		},
	}
	registerToolsetSpec(cmd, &spec)
	return cmd
}

func newToolsetListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the toolsets",
		Long:    `list prints one line per toolset: how many tool, prompt and resource selectors it has; -o wide adds them.`,
		Example: `  switchboard toolset list
  switchboard toolset list -o json`,
		Args: cobra.NoArgs,
		RunE: clientVerb(func(cmd *cobra.Command, _ []string, c *client.Client) error {
			list, err := c.Toolsets(cmd.Context())
			if err != nil {
				return err
			}
			return show(cmd, api.ToolsetList{Toolsets: list}, func(out io.Writer) { render.ToolsetList(out, list, wideOutput(cmd)) })
		}),
	}
}

func newToolsetShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "show NAME",
		Short:             "Show a toolset",
		Long:              `show prints a toolset as JSON, as "toolset update -f" takes it back.`,
		Example:           `  switchboard toolset show coder > coder.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeToolsetName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			v, err := c.Toolset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if jsonOutput(cmd) {
				return render.JSON(cmd.OutOrStdout(), v)
			}
			return render.JSON(cmd.OutOrStdout(), v.Toolset)
		}),
	}
}

func newToolsetRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove", "delete"},
		Short:             "Delete a toolset",
		Long:              `rm deletes a toolset; its clients' next requests are answered 404. Tokens scoped to it stay (revoke them with "switchboard token revoke").`,
		Example:           `  switchboard toolset rm coder`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeToolsetName,
		RunE: clientVerb(func(cmd *cobra.Command, args []string, c *client.Client) error {
			if err := c.DeleteToolset(cmd.Context(), args[0], 0); err != nil {
				return err
			}
			return show(cmd, map[string]string{"removed": args[0]}, func(out io.Writer) { fmt.Fprintf(out, "removed toolset %s\n", args[0]) })
		}),
	}
}
