package render

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/prompt"
)

// The --progress modes of "call".
const (
	ProgressModeAuto  = "auto"
	ProgressModeBar   = "bar"
	ProgressModeLines = "lines"
	ProgressModeNone  = "none"
)

// Tools prints the tools of every connected server, or of the server
// named if not "", to out (ToolList, or why there are none) or as JSON if
// asJSON.
func Tools(ctx context.Context, c *client.Client, out io.Writer, server string, asJSON bool) error {
	var tools []api.ToolView
	var err error
	if server != "" {
		tools, err = c.ServerTools(ctx, server)
	} else {
		tools, err = c.Tools(ctx)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return JSON(out, api.ToolList{Tools: tools})
	}
	if len(tools) > 0 {
		return ToolList(out, tools)
	}
	if server == "" {
		NoTools(out, nil)
		return nil
	}
	// Say why: a server that is not connected lists none.
	v, err := c.Server(ctx, server)
	if err == nil {
		NoTools(out, &v)
	}
	return err
}

// ToolList prints the table of "tools": each tool's address, its
// arguments and the first line of its description.
func ToolList(out io.Writer, tools []api.ToolView) error {
	tw := Table(out)
	fmt.Fprintln(tw, "TOOL\tARGUMENTS\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Address, OrDash(argumentSummary(t.InputSchema)), prompt.FirstLine(t.Description, 70))
	}
	return tw.Flush()
}

// ToolHits prints the table of "tools --search": each tool's address, its
// score and the first line of its description, or that none matched query.
func ToolHits(out io.Writer, query string, hits []api.ToolHit) error {
	if len(hits) == 0 {
		_, err := fmt.Fprintf(out, "no tool matches %q\n", query)
		return err
	}
	tw := Table(out)
	fmt.Fprintln(tw, "TOOL\tSCORE\tDESCRIPTION")
	for _, h := range hits {
		fmt.Fprintf(tw, "%s/%s\t%.2f\t%s\n", h.Server, h.Name, h.Score, prompt.FirstLine(h.Description, 70))
	}
	return tw.Flush()
}

// NoTools says why "tools" lists none: of every server (v nil), no server
// is connected; of one, its status and last error.
func NoTools(out io.Writer, v *sb.ServerView) {
	if v == nil {
		fmt.Fprintln(out, `no tools: no server is connected (see "switchboard server list")`)
		return
	}
	why := "status " + string(v.Runtime.Status)
	if e := v.Runtime.Error; e != nil {
		why += "; " + string(e.Phase) + ": " + prompt.FirstLine(e.Message, ListErrorWidth)
	}
	fmt.Fprintf(out, "%s has no tools (%s)\n", v.Name, why)
}

// ToolExample returns arguments for the tool at address (server/tool)
// made of its first field ('{"message": "..."}'), or "" if the daemon
// cannot say what its fields are.
func ToolExample(ctx context.Context, c *client.Client, address string) string {
	server, name, _ := strings.Cut(address, "/")
	tools, err := c.ServerTools(ctx, server)
	if err != nil {
		return ""
	}
	for _, t := range tools {
		if t.Name == name {
			fields, _ := prompt.Fields(t.InputSchema)
			return ExampleArguments(fields)
		}
	}
	return ""
}

// ProgressMode resolves a --progress mode for the stderr errOut: auto is
// a bar on a terminal and lines elsewhere.
func ProgressMode(mode string, errOut io.Writer) (string, error) {
	switch mode {
	case ProgressModeAuto:
		if IsTerminalWriter(errOut) {
			return ProgressModeBar, nil
		}
		return ProgressModeLines, nil
	case ProgressModeBar, ProgressModeLines, ProgressModeNone:
		return mode, nil
	}
	return "", fmt.Errorf("%q: want bar, lines, none or auto", mode)
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

// ExampleArguments is a JSON object of the first field of fields (the
// first required one, if any) with a value of its type; "" for none.
func ExampleArguments(fields []prompt.Field) string {
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

// ParseArguments checks that text is one JSON object. example is the
// object its refusals show ("": a generic one).
func ParseArguments(text, example string) (json.RawMessage, error) {
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
		if err == nil || errors.As(err, new(*json.UnmarshalTypeError)) {
			return nil, fmt.Errorf("the arguments must be a JSON object such as '%s', not %s", example, prompt.FirstLine(text, 40))
		}
		return nil, fmt.Errorf("the arguments are not valid JSON (%v); quote them for the shell: '%s'", err, example)
	}
	if dec.More() {
		return nil, errors.New("the arguments must be one JSON object; there is more after it")
	}
	return json.RawMessage(text), nil
}

// CallIO is where a call prints and asks.
type CallIO struct {
	Out, ErrOut io.Writer
	// Progress is how progress is shown on ErrOut: ProgressModeBar (a
	// terminal), ProgressModeLines, or ProgressModeNone (or "").
	Progress string
	// In, if set, is a terminal to ask elicitation questions on (the
	// questions go to ErrOut); nil declines every elicitation.
	In *bufio.Reader
	// AsJSON prints the result, or {"error": ...}, as JSON (-o json).
	AsJSON bool
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

// ErrToolError is returned after a result with isError was printed.
var ErrToolError = errors.New("the tool reported an error")

// Call makes the call, streamed: it draws the progress, asks the
// person at the terminal (or declines) when the server elicits input, and
// prints the result or the failure.
func Call(ctx context.Context, c *client.Client, cio *CallIO, tool string, arguments json.RawMessage, opts client.CallOptions) error {
	var bar *ProgressBar
	switch cio.Progress {
	case ProgressModeBar:
		bar = NewProgressBar(cio.ErrOut)
		opts.OnProgress = func(p sb.Progress) { bar.Draw(p.Progress, p.Total, p.Message) }
	case ProgressModeLines:
		lines := NewProgressLines(cio.ErrOut)
		opts.OnProgress = func(p sb.Progress) { lines.Print(p.Progress, p.Total, p.Message) }
	}
	defer bar.Clear()
	opts.OnElicitation = func(_ context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
		bar.Clear()
		if cio.In == nil {
			fmt.Fprintf(cio.ErrOut, "switchboard: the server asked for input (%s); declined: stdin is not a terminal\n", prompt.FirstLine(req.Message, 80))
			return sb.ElicitationResponse{Action: "decline"}, nil
		}
		return prompt.Elicit(cio.In, cio.ErrOut, &req)
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
func handleResult(cio *CallIO, tool string, raw json.RawMessage) error {
	var res ToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("calling %s: unreadable result: %v", tool, err)
	}
	switch {
	case cio.AsJSON:
		if err := RawJSON(cio.Out, raw); err != nil {
			return err
		}
	case res.IsError:
		if err := Result(cio.ErrOut, &res); err != nil {
			return err
		}
	default:
		if err := Result(cio.Out, &res); err != nil {
			return err
		}
	}
	if res.IsError {
		return fmt.Errorf("%s: %w (isError)", tool, ErrToolError)
	}
	return nil
}

// handleCallError returns the failure; with --json it prints
// {"error": e} first.
func handleCallError(cio *CallIO, e *client.Error) error {
	if cio.AsJSON {
		if err := JSON(cio.Out, api.ErrorBody{Error: e.Info()}); err != nil {
			return err
		}
	}
	return callFailure{e}
}
