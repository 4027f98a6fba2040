package main

// This file holds "tools", which lists the tools of the connected servers,
// and "call", which calls one over the API's server-sent events: it draws
// progress on a terminal, asks the person at the terminal when the server
// elicits input, and prints the result.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

func newToolsCommand() *cobra.Command {
	var search string
	var limit int
	cmd := &cobra.Command{
		Use:   "tools [NAME]",
		Short: "List the tools of every connected server, or of one server",
		Long: `tools lists the tools of every connected server, or of the server NAME,
with the address to call each by ("server/tool"), its arguments (required
ones marked *) and the first line of its description.

--search Q finds instead the tools of every connected server that match
Q, words saying what the tool does, best first (at most --limit), with
their scores: the search that search_tools makes on an endpoint in search
mode (docs/tool-search.md).`,
		Example: `  switchboard tools
  switchboard tools everything
  switchboard tools -o json | jq -r '.tools[].address'
  switchboard tools --search "read a file" --limit 3`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("search") {
				if len(args) > 0 {
					return fmt.Errorf("--search looks through every server's tools: give no server name")
				}
				if strings.TrimSpace(search) == "" {
					return fmt.Errorf("--search: say in words what the tool should do")
				}
				if limit < 1 || limit > 100 {
					return fmt.Errorf("--limit %d: must be from 1 to 100", limit)
				}
				return withClient(cmd, func(c *client.Client) error {
					hits, err := c.SearchTools(cmd.Context(), search, limit)
					if err != nil {
						return err
					}
					return show(cmd, api.ToolHits{Tools: hits}, func(out io.Writer) { render.ToolHits(out, search, hits) })
				})
			}
			server := ""
			if len(args) == 1 {
				if server = args[0]; server == "" {
					return fmt.Errorf("tools: the server name is empty; give none to list every server's tools")
				}
			}
			return withClient(cmd, func(c *client.Client) error {
				return render.Tools(cmd.Context(), c, cmd.OutOrStdout(), server, jsonOutput(cmd))
			})
		},
	}
	cmd.Flags().StringVar(&search, "search", "", "find the tools that match these words, best first, instead of listing")
	cmd.Flags().IntVar(&limit, "limit", 10, "with --search: at most this many tools (1-100)")
	addTokenFlag(cmd, false)
	return cmd
}

// callFlags are the options of "call".
type callFlags struct {
	timeout, maxTotal time.Duration
	resetOnProgress   bool
	progress          string
}

func newCallCommand() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call SERVER/TOOL [JSON]",
		Short: "Call one tool and print its result",
		Long: `call calls the tool TOOL of the server SERVER with the JSON object of
arguments (default {}; "-" reads it from stdin) and prints the result once:
text contents as text, other contents as a summary; the structured content
(JSON for programs) only when there is no text, since tools that return
both say the same thing twice. -o json prints the whole MCP CallToolResult
instead.

The progress the server reports goes to stderr (--progress): as a bar
redrawn in place when stderr is a terminal, as lines ("progress 3/5:
message", at most two a second) when it is not, so that a log shows a
long call's progress; "none" prints nothing. When the server asks for
input (elicitation) and stdin is a terminal, call asks the questions there
(an empty answer to a required field declines); otherwise it declines.

--timeout is the per-request timeout (default: the server's call timeout,
else 60s); --reset-on-progress restarts it on every progress report;
--max-total caps the whole call. The exit status is non-zero when the call
fails or the tool reports an error (isError), which is then printed to
stderr.`,
		Example: `  switchboard call everything/echo '{"message": "hello"}'
  switchboard call everything/get-sum '{"a": 2, "b": 3}'
  switchboard call everything/trigger-long-running-operation '{"duration": 30, "steps": 10}' --timeout 10s --reset-on-progress --max-total 10m
  jq -n '{path: "/tmp"}' | switchboard call fs/list_directory -
  switchboard call everything/get-tiny-image -o json`,
		ValidArgsFunction: completeToolAddress,
		Args:              cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tool := args[0]
			if s, t, ok := strings.Cut(tool, "/"); !ok || s == "" || t == "" {
				return fmt.Errorf("%q: want SERVER/TOOL, e.g. everything/echo (see \"switchboard tools\")", tool)
			}
			argText := "{}"
			if len(args) == 2 {
				argText = args[1]
			}
			fromStdin := argText == "-"
			if fromStdin {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading the arguments from stdin: %w", err)
				}
				argText = string(b)
			}
			arguments, err := render.ParseArguments(argText, "")
			if err != nil {
				// Again, with an example of this tool's own arguments, if the
				// daemon can say what they are.
				if c, cerr := clientFrom(cmd); cerr == nil {
					if ex := render.ToolExample(cmd.Context(), c, tool); ex != "" {
						_, err = render.ParseArguments(argText, ex)
					}
					c.Close()
				}
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			progress, err := render.ProgressMode(f.progress, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("--progress %w", err)
			}
			return withClient(cmd, func(c *client.Client) error {
				cio := &render.CallIO{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Progress: progress, AsJSON: jsonOutput(cmd)}
				// Questions only to a person who can answer them.
				if !fromStdin && cmd.InOrStdin() == os.Stdin && render.IsTerminal(os.Stdin) {
					cio.In = bufio.NewReader(os.Stdin)
				}
				return render.Call(cmd.Context(), c, cio, tool, arguments, opts)
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.timeout, "timeout", 0, "per-request timeout, e.g. 30s or 2m (default: the server's call timeout)")
	fl.DurationVar(&f.maxTotal, "max-total", 0, "hard cap on the whole call, progress included (default: the server's, else none)")
	fl.BoolVar(&f.resetOnProgress, "reset-on-progress", false, "restart the per-request timeout on every progress report")
	fl.StringVar(&f.progress, "progress", render.ProgressModeAuto, "how to show progress on stderr: bar, lines, none, or auto (a bar on a terminal, else lines)")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions([]string{render.ProgressModeAuto, render.ProgressModeBar, render.ProgressModeLines, render.ProgressModeNone}, cobra.ShellCompDirectiveNoFileComp))
	addTokenFlag(cmd, false)
	return cmd
}

// options converts the flags to the client's call options.
func (f *callFlags) options() (client.CallOptions, error) {
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"--timeout", f.timeout}, {"--max-total", f.maxTotal}} {
		switch {
		case d.d < 0:
			return client.CallOptions{}, fmt.Errorf("%s must not be negative", d.flag)
		case d.d > 0 && d.d < time.Millisecond:
			return client.CallOptions{}, fmt.Errorf("%s must be at least 1ms", d.flag)
		}
	}
	return client.CallOptions{Timeout: f.timeout, MaxTotalTimeout: f.maxTotal, ResetTimeoutOnProgress: f.resetOnProgress}, nil
}
