package main

// This file holds "tools", which lists the tools of the connected servers,
// and "call", which calls one over the API's server-sent events: it draws
// progress on a terminal, asks the person at the terminal when the server
// elicits input, and prints the result.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/prompt"
)

func newToolsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools [NAME]",
		Short: "List the tools of every connected server, or of one server",
		Long: `tools lists the tools of every connected server, or of the server NAME,
with the address to call each by ("server/tool"), its arguments (required
ones marked *) and the first line of its description.`,
		Example: `  switchboard tools
  switchboard tools everything
  switchboard tools -o json | jq -r '.tools[].address'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeServerName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client.Client) error {
				var tools []api.ToolView
				var err error
				if len(args) == 1 {
					tools, err = c.ServerTools(cmd.Context(), args[0])
				} else {
					tools, err = c.Tools(cmd.Context())
				}
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return printJSON(cmd.OutOrStdout(), api.ToolList{Tools: tools})
				}
				out := cmd.OutOrStdout()
				if len(tools) == 0 {
					if len(args) == 0 {
						fmt.Fprintln(out, `no tools: no server is connected (see "switchboard server list")`)
						return nil
					}
					// Say why: a server that is not connected lists none.
					v, err := c.Server(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					why := "status " + string(v.Runtime.Status)
					if e := v.Runtime.Error; e != nil {
						why += "; " + string(e.Phase) + ": " + prompt.FirstLine(e.Message, listErrorWidth)
					}
					fmt.Fprintf(out, "%s has no tools (%s)\n", args[0], why)
					return nil
				}
				tw := newTable(out)
				fmt.Fprintln(tw, "TOOL\tARGUMENTS\tDESCRIPTION")
				for _, t := range tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Address, orDash(argumentSummary(t.InputSchema)), prompt.FirstLine(t.Description, 70))
				}
				return tw.Flush()
			})
		},
	}
	addTokenFlag(cmd, false)
	return cmd
}

// argumentSummary lists a tool's argument names from its input schema,
// required ones marked with "*".
func argumentSummary(schema json.RawMessage) string {
	fields, err := prompt.Fields(schema)
	if err != nil {
		return "?"
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
		if f.Required {
			names[i] += "*"
		}
	}
	return strings.Join(names, " ")
}

// callFlags are the options of "call".
type callFlags struct {
	timeout, maxTotal time.Duration
	resetOnProgress   bool
	progress          string
}

// The --progress modes of "call".
const (
	progressModeAuto  = "auto"
	progressModeBar   = "bar"
	progressModeLines = "lines"
	progressModeNone  = "none"
)

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
			arguments, err := parseArguments(argText, "")
			if err != nil {
				// Again, with an example of this tool's own arguments, if the
				// daemon can say what they are.
				if ex := toolExample(cmd, tool); ex != "" {
					_, err = parseArguments(argText, ex)
				}
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			progress, err := f.progressMode(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return withClient(cmd, func(c *client.Client) error {
				cio := &callIO{
					out:    cmd.OutOrStdout(),
					errOut: cmd.ErrOrStderr(),
					asJSON: jsonOutput(cmd),
				}
				// Questions only to a person who can answer them.
				cio.progress = progress
				if !fromStdin && cmd.InOrStdin() == os.Stdin && isTerminal(os.Stdin) {
					cio.in = bufio.NewReader(os.Stdin)
				}
				return runCall(cmd.Context(), c, cio, tool, arguments, opts)
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.timeout, "timeout", 0, "per-request timeout, e.g. 30s or 2m (default: the server's call timeout)")
	fl.DurationVar(&f.maxTotal, "max-total", 0, "hard cap on the whole call, progress included (default: the server's, else none)")
	fl.BoolVar(&f.resetOnProgress, "reset-on-progress", false, "restart the per-request timeout on every progress report")
	fl.StringVar(&f.progress, "progress", progressModeAuto, "how to show progress on stderr: bar, lines, none, or auto (a bar on a terminal, else lines)")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions([]string{progressModeAuto, progressModeBar, progressModeLines, progressModeNone}, cobra.ShellCompDirectiveNoFileComp))
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

// toolExample returns arguments for the tool at address (server/tool)
// made of its first field ('{"message": "..."}'), or "" if the daemon
// cannot say what its fields are.
func toolExample(cmd *cobra.Command, address string) string {
	server, name, _ := strings.Cut(address, "/")
	var example string
	_ = withClient(cmd, func(c *client.Client) error {
		tools, err := c.ServerTools(cmd.Context(), server)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.Name == name {
				fields, _ := prompt.Fields(t.InputSchema)
				example = exampleArguments(fields)
			}
		}
		return nil
	})
	return example
}

// exampleArguments is a JSON object of the first field of fields (the
// first required one, if any) with a value of its type; "" for none.
func exampleArguments(fields []prompt.Field) string {
	if len(fields) == 0 {
		return ""
	}
	f := fields[0]
	if i := slices.IndexFunc(fields, func(f prompt.Field) bool { return f.Required }); i >= 0 {
		f = fields[i]
	}
	var v any = "..."
	switch {
	case len(f.Enum) > 0:
		v = f.Enum[0]
	case f.Type == "integer" || f.Type == "number":
		v = 1
	case f.Type == "boolean":
		v = true
	case f.Type == "array":
		v = []any{}
	case f.Type == "object":
		v = map[string]any{}
	}
	b, _ := json.Marshal(v)
	k, _ := json.Marshal(f.Name)
	return fmt.Sprintf("{%s: %s}", k, b)
}

// progressMode resolves --progress for the stderr errOut: auto is a bar
// on a terminal and lines elsewhere.
func (f *callFlags) progressMode(errOut io.Writer) (string, error) {
	switch f.progress {
	case progressModeAuto:
		if isTerminalWriter(errOut) {
			return progressModeBar, nil
		}
		return progressModeLines, nil
	case progressModeBar, progressModeLines, progressModeNone:
		return f.progress, nil
	}
	return "", fmt.Errorf("--progress %q: want bar, lines, none or auto", f.progress)
}

// parseArguments checks that text is one JSON object. example is the
// object its refusals show ("": a generic one).
func parseArguments(text, example string) (json.RawMessage, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return json.RawMessage("{}"), nil
	}
	if example == "" {
		example = `{"name": "value"}`
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		if err == nil || strings.Contains(err.Error(), "cannot unmarshal") {
			return nil, fmt.Errorf("the arguments must be a JSON object such as '%s', not %s", example, prompt.FirstLine(text, 40))
		}
		return nil, fmt.Errorf("the arguments are not valid JSON (%v); quote them for the shell: '%s'", err, example)
	}
	if dec.More() {
		return nil, errors.New("the arguments must be one JSON object; there is more after it")
	}
	return json.RawMessage(text), nil
}

// callIO is where a call prints and asks.
type callIO struct {
	out, errOut io.Writer
	// progress is how progress is shown on errOut: progressModeBar (a
	// terminal), progressModeLines, or progressModeNone (or "").
	progress string
	// in, if set, is a terminal to ask elicitation questions on (the
	// questions go to errOut); nil declines every elicitation.
	in     *bufio.Reader
	asJSON bool
}

// callFailure is a call that produced no result, as "call" reports it.
type callFailure struct{ err *client.Error }

func (e callFailure) Error() string {
	if e.err.Phase != "" {
		return fmt.Sprintf("error (%s, phase %s): %s", e.err.Code, e.err.Phase, e.err.Message)
	}
	return fmt.Sprintf("error (%s): %s", e.err.Code, e.err.Message)
}

func (e callFailure) Unwrap() error { return e.err }

// errToolError is returned after a result with isError was printed.
var errToolError = errors.New("the tool reported an error")

// runCall makes the call, streamed: it draws the progress, asks the
// person at the terminal (or declines) when the server elicits input, and
// prints the result or the failure.
func runCall(ctx context.Context, c *client.Client, cio *callIO, tool string, arguments json.RawMessage, opts client.CallOptions) error {
	var bar *progressBar
	switch cio.progress {
	case progressModeBar:
		bar = newProgressBar(cio.errOut)
		opts.OnProgress = func(p sb.Progress) { bar.Draw(p.Progress, p.Total, p.Message) }
	case progressModeLines:
		lines := newProgressLines(cio.errOut)
		opts.OnProgress = func(p sb.Progress) { lines.Print(p.Progress, p.Total, p.Message) }
	}
	defer bar.Clear()
	opts.OnElicitation = func(_ context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
		bar.Clear()
		if cio.in == nil {
			fmt.Fprintf(cio.errOut, "switchboard: the server asked for input (%s); declined: stdin is not a terminal\n", prompt.FirstLine(req.Message, 80))
			return sb.ElicitationResponse{Action: "decline"}, nil
		}
		return prompt.Elicit(cio.in, cio.errOut, &req)
	}
	var args any
	if arguments != nil {
		args = arguments
	}
	raw, err := c.CallRaw(ctx, tool, args, opts)
	bar.Clear()
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == 0 {
		return handleCallError(cio, ae)
	}
	if err != nil {
		return err
	}
	return handleResult(cio, tool, raw)
}

// handleResult prints a result: to stdout, or to stderr with a non-nil
// error when the tool reported an error. --json prints it unchanged to
// stdout either way.
func handleResult(cio *callIO, tool string, raw json.RawMessage) error {
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("calling %s: unreadable result: %v", tool, err)
	}
	switch {
	case cio.asJSON:
		if err := printRawJSON(cio.out, raw); err != nil {
			return err
		}
	case res.IsError:
		if err := printToolResult(cio.errOut, &res); err != nil {
			return err
		}
	default:
		if err := printToolResult(cio.out, &res); err != nil {
			return err
		}
	}
	if res.IsError {
		return fmt.Errorf("%s: %w (isError)", tool, errToolError)
	}
	return nil
}

// handleCallError returns the failure; with --json it prints
// {"error": e} first.
func handleCallError(cio *callIO, e *client.Error) error {
	if cio.asJSON {
		if err := printJSON(cio.out, api.ErrorBody{Error: e.Info()}); err != nil {
			return err
		}
	}
	return callFailure{e}
}
