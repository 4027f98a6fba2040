package main

// This file holds "tools", which lists the tools of the connected servers,
// and "call", which calls one over the API's server-sent events: it draws
// progress on a terminal, asks the person at the terminal when the server
// elicits input, and prints the result.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
)

// toolView is a tool as GET /api/v1/tools lists it.
type toolView struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Address     string          `json:"address"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func newToolsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools [NAME]",
		Short: "List the tools of every connected server, or of one server",
		Long: `tools lists the tools of every connected server, or of the server NAME,
with the address to call each by ("server/tool"), its arguments (required
ones marked *) and the first line of its description.`,
		Example: `  switchboard tools
  switchboard tools everything
  switchboard tools --json | jq -r '.tools[].address'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(c *client) error {
				path := "/api/v1/tools"
				if len(args) == 1 {
					path = "/api/v1/servers/" + pathName(args[0]) + "/tools"
				}
				var body struct {
					Tools []toolView `json:"tools"`
				}
				raw, err := c.getJSON(cmd.Context(), "GET", path, nil, &body)
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					return printRawJSON(cmd.OutOrStdout(), raw)
				}
				out := cmd.OutOrStdout()
				if len(body.Tools) == 0 {
					if len(args) == 0 {
						fmt.Fprintln(out, `no tools: no server is connected (see "switchboard server list")`)
						return nil
					}
					// Say why: a server that is not connected lists none.
					var v sb.ServerView
					if _, err := c.getJSON(cmd.Context(), "GET", "/api/v1/servers/"+pathName(args[0]), nil, &v); err != nil {
						return err
					}
					why := "status " + string(v.Runtime.Status)
					if e := v.Runtime.Error; e != nil {
						why += "; " + string(e.Phase) + ": " + truncate(e.Message, listErrorWidth)
					}
					fmt.Fprintf(out, "%s has no tools (%s)\n", args[0], why)
					return nil
				}
				tw := newTable(out)
				fmt.Fprintln(tw, "TOOL\tARGUMENTS\tDESCRIPTION")
				for _, t := range body.Tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Address, orDash(argumentSummary(t.InputSchema)), truncate(t.Description, 70))
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
	fields, err := schemaFields(schema)
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

// schemaField is one property of an object JSON schema: a tool argument or
// an elicitation field.
type schemaField struct {
	Name        string
	Type        string // "string", "number", "integer", "boolean", ... or ""
	Title       string
	Description string
	Enum        []string
	Default     json.RawMessage
	Required    bool
}

// schemaFields returns the properties of an object schema in the order the
// schema lists them.
func schemaFields(schema json.RawMessage) ([]schemaField, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
		return nil, nil
	}
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, err
	}
	if len(top.Properties) == 0 || string(top.Properties) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("properties is not an object")
	}
	var fields []schemaField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var p struct {
			Type        any               `json:"type"`
			Title       string            `json:"title"`
			Description string            `json:"description"`
			Enum        []json.RawMessage `json:"enum"`
			Default     json.RawMessage   `json:"default"`
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		f := schemaField{Name: name, Title: p.Title, Description: p.Description, Default: p.Default,
			Required: slices.Contains(top.Required, name)}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any: // ["string", "null"]: the first non-null type
			for _, v := range t {
				if s, ok := v.(string); ok && s != "null" {
					f.Type = s
					break
				}
			}
		}
		for _, e := range p.Enum {
			var s string
			if json.Unmarshal(e, &s) != nil {
				s = string(e)
			}
			f.Enum = append(f.Enum, s)
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// callFlags are the options of "call".
type callFlags struct {
	timeout, maxTotal time.Duration
	resetOnProgress   bool
}

func newCallCommand() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call SERVER/TOOL [JSON]",
		Short: "Call one tool and print its result",
		Long: `call calls the tool TOOL of the server SERVER with the JSON object of
arguments (default {}; "-" reads it from stdin) and prints the result: text
contents as text, other contents as a summary, structured content as
indented JSON (--json prints the whole MCP CallToolResult instead).

When stderr is a terminal, the progress the server reports is drawn as a
bar there. When the server asks for input (elicitation) and stdin is a
terminal, call asks the questions there (an empty answer to a required
field declines); otherwise it declines.

--timeout is the per-request timeout (default: the server's call timeout,
else 60s); --reset-on-progress restarts it on every progress report;
--max-total caps the whole call. The exit status is non-zero when the call
fails or the tool reports an error (isError), which is then printed to
stderr.`,
		Example: `  switchboard call everything/echo '{"message": "hello"}'
  switchboard call build/run '{"target": "all"}' --timeout 30s --reset-on-progress --max-total 10m
  jq -n '{path: "/tmp"}' | switchboard call fs/list_directory -
  switchboard call everything/getTinyImage --json`,
		Args: cobra.RangeArgs(1, 2),
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
			arguments, err := parseArguments(argText)
			if err != nil {
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			return withClient(cmd, func(c *client) error {
				cio := &callIO{
					out:    cmd.OutOrStdout(),
					errOut: cmd.ErrOrStderr(),
					asJSON: jsonOutput(cmd),
				}
				// Progress only for a person at a terminal, never into a
				// pipe or a file; questions only to a person who can
				// answer them.
				cio.progress = cmd.ErrOrStderr() == os.Stderr && isTerminal(os.Stderr)
				if !fromStdin && cmd.InOrStdin() == os.Stdin && isTerminal(os.Stdin) {
					cio.in = bufio.NewReader(os.Stdin)
				}
				return runCall(cmd.Context(), c, cio, callRequest{Tool: tool, Arguments: arguments, Options: opts})
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.timeout, "timeout", 0, "per-request timeout, e.g. 30s or 2m (default: the server's call timeout)")
	fl.DurationVar(&f.maxTotal, "max-total", 0, "hard cap on the whole call, progress included (default: the server's, else none)")
	fl.BoolVar(&f.resetOnProgress, "reset-on-progress", false, "restart the per-request timeout on every progress report")
	addTokenFlag(cmd, false)
	return cmd
}

// options converts the flags to the API's call options.
func (f *callFlags) options() (callOptions, error) {
	toMS := func(flag string, d time.Duration) (int64, error) {
		switch {
		case d < 0:
			return 0, fmt.Errorf("%s must not be negative", flag)
		case d > 0 && d < time.Millisecond:
			return 0, fmt.Errorf("%s must be at least 1ms", flag)
		}
		return d.Milliseconds(), nil
	}
	var o callOptions
	var err error
	if o.TimeoutMS, err = toMS("--timeout", f.timeout); err != nil {
		return o, err
	}
	if o.MaxTotalTimeoutMS, err = toMS("--max-total", f.maxTotal); err != nil {
		return o, err
	}
	o.ResetTimeoutOnProgress = f.resetOnProgress
	return o, nil
}

// parseArguments checks that text is one JSON object.
func parseArguments(text string) (json.RawMessage, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		if err == nil || strings.Contains(err.Error(), "cannot unmarshal") {
			return nil, fmt.Errorf("the arguments must be a JSON object such as '{\"text\": \"hi\"}', not %s", truncate(text, 40))
		}
		return nil, fmt.Errorf("the arguments are not valid JSON (%v); quote them for the shell: '{\"text\": \"hi\"}'", err)
	}
	if dec.More() {
		return nil, errors.New("the arguments must be one JSON object; there is more after it")
	}
	return json.RawMessage(text), nil
}

// callRequest and callOptions are the body of POST /api/v1/call.
type callRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Options   callOptions     `json:"options"`
}

type callOptions struct {
	TimeoutMS              int64 `json:"timeout_ms,omitempty"`
	MaxTotalTimeoutMS      int64 `json:"max_total_timeout_ms,omitempty"`
	ResetTimeoutOnProgress bool  `json:"reset_timeout_on_progress,omitempty"`
}

// callIO is where a call prints and asks.
type callIO struct {
	out, errOut io.Writer
	// progress draws a progress bar on errOut (a terminal).
	progress bool
	// in, if set, is a terminal to ask elicitation questions on (the
	// questions go to errOut); nil declines every elicitation.
	in     *bufio.Reader
	asJSON bool
}

// callError is an "error" event of a call: the call produced no result.
type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Phase   string `json:"phase,omitempty"`
}

func (e *callError) Error() string {
	if e.Phase != "" {
		return fmt.Sprintf("error (%s, phase %s): %s", e.Code, e.Phase, e.Message)
	}
	return fmt.Sprintf("error (%s): %s", e.Code, e.Message)
}

// errToolError is returned after a result with isError was printed.
var errToolError = errors.New("the tool reported an error")

// runCall sends the call with Accept: text/event-stream and handles its
// events until the result or the error.
func runCall(ctx context.Context, c *client, cio *callIO, creq callRequest) error {
	req, err := c.newRequest(ctx, "POST", "/api/v1/call", creq)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	var bar *progressBar
	if cio.progress {
		bar = newProgressBar(cio.errOut)
	}
	defer bar.Clear()

	// An answer without streaming (an older daemon or a proxy in between)
	// is a CallResponse.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		var body struct {
			Result json.RawMessage `json:"result"`
			Error  *callError      `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return fmt.Errorf("unexpected answer from %s: %v", req.URL.Redacted(), err)
		}
		if body.Error != nil {
			return handleCallError(cio, body.Error)
		}
		return handleResult(cio, creq.Tool, body.Result)
	}

	events := newSSEReader(resp.Body)
	for {
		name, data, err := events.next()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the connection closed before the call finished")
			}
			return fmt.Errorf("calling %s: %w", creq.Tool, err)
		}
		switch name {
		case "progress":
			var p sb.Progress
			if bar != nil && json.Unmarshal(data, &p) == nil {
				bar.Draw(p.Progress, p.Total, p.Message)
			}
		case "elicitation":
			bar.Clear()
			if err := answerElicitation(ctx, c, cio, data); err != nil {
				return err
			}
		case "result":
			bar.Clear()
			return handleResult(cio, creq.Tool, data)
		case "error":
			bar.Clear()
			var e callError
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("calling %s: unreadable error event: %v", creq.Tool, err)
			}
			return handleCallError(cio, &e)
		}
	}
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

// handleCallError returns e; with --json it prints {"error": e} first.
func handleCallError(cio *callIO, e *callError) error {
	if cio.asJSON {
		if err := printJSON(cio.out, map[string]any{"error": e}); err != nil {
			return err
		}
	}
	return e
}

// sseReader reads server-sent events.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event's name ("message" if unnamed) and data (its
// data lines joined with "\n"). Comments and events without data are
// skipped. Lines may be of any length.
func (s *sseReader) next() (string, []byte, error) {
	var (
		name string
		data []byte
		has  bool
	)
	for {
		line, err := s.r.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			return "", nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if has {
				if name == "" {
					name = "message"
				}
				return name, data, nil
			}
			name = ""
			if err != nil {
				return "", nil, err
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "": // a comment
		case "event":
			name = value
		case "data":
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		}
		if err != nil { // the last line had no newline
			if has {
				return orMessage(name), data, nil
			}
			return "", nil, err
		}
	}
}

func orMessage(name string) string {
	if name == "" {
		return "message"
	}
	return name
}

// elicitationEvent is the data of an "elicitation" event.
type elicitationEvent struct {
	ID string `json:"id"`
	sb.ElicitationRequest
}

// answerElicitation asks the person at the terminal, if there is one, and
// posts the answer; without a terminal it declines.
func answerElicitation(ctx context.Context, c *client, cio *callIO, data []byte) error {
	var ev elicitationEvent
	if err := json.Unmarshal(data, &ev); err != nil || ev.ID == "" {
		return fmt.Errorf("unreadable elicitation event: %s", truncate(string(data), 80))
	}
	var answer sb.ElicitationResponse
	if cio.in == nil {
		fmt.Fprintf(cio.errOut, "switchboard: the server asked for input (%s); declined: stdin is not a terminal\n", truncate(ev.Message, 80))
		answer = sb.ElicitationResponse{Action: "decline"}
	} else {
		var err error
		answer, err = askElicitation(cio.in, cio.errOut, &ev.ElicitationRequest)
		if err != nil {
			return err
		}
	}
	_, err := c.do(ctx, "POST", "/api/v1/elicitations/"+pathName(ev.ID), answer)
	if isAPIError(err, "not_found") {
		// The call ended (timed out, say) while the person was typing:
		// its error or result follows on the stream.
		fmt.Fprintln(cio.errOut, "switchboard: the server no longer waits for this answer")
		return nil
	}
	return err
}

// askElicitation asks for each field of the requested schema. An empty
// answer to a required field, or to every field, declines.
func askElicitation(in *bufio.Reader, out io.Writer, req *sb.ElicitationRequest) (sb.ElicitationResponse, error) {
	decline := sb.ElicitationResponse{Action: "decline"}
	readLine := func() (string, error) {
		line, err := in.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				return "", nil // end of input: an empty answer
			}
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		return strings.TrimSpace(line), nil
	}

	fmt.Fprintf(out, "The server asks: %s\n", req.Message)
	if req.Mode == "url" {
		fmt.Fprintf(out, "Open %s\nthen press Enter to accept (or type n to decline): ", req.URL)
		line, err := readLine()
		if err != nil {
			return decline, err
		}
		if l := strings.ToLower(line); l == "n" || l == "no" {
			return decline, nil
		}
		return sb.ElicitationResponse{Action: "accept"}, nil
	}
	fields, err := schemaFields(req.RequestedSchema)
	if err != nil {
		fmt.Fprintf(out, "(the requested schema is unreadable: %v; declining)\n", err)
		return decline, nil
	}
	if len(fields) == 0 {
		fmt.Fprint(out, "Press Enter to decline, or type y to accept: ")
		line, err := readLine()
		if err != nil {
			return decline, err
		}
		if l := strings.ToLower(line); l == "y" || l == "yes" {
			return sb.ElicitationResponse{Action: "accept", Content: map[string]any{}}, nil
		}
		return decline, nil
	}
	fmt.Fprintln(out, "(an empty answer to a required field declines)")
	content := map[string]any{}
	for _, f := range fields {
		for {
			fmt.Fprint(out, fieldPrompt(f))
			line, err := readLine()
			if err != nil {
				return decline, err
			}
			if line == "" {
				if f.Required {
					return decline, nil
				}
				break
			}
			v, err := convertAnswer(f, line)
			if err != nil {
				fmt.Fprintf(out, "  %v\n", err)
				continue
			}
			content[f.Name] = v
			break
		}
	}
	if len(content) == 0 {
		return decline, nil
	}
	return sb.ElicitationResponse{Action: "accept", Content: content}, nil
}

// fieldPrompt is the question for one field, e.g.
// "  answer, your answer (string; required): ".
func fieldPrompt(f schemaField) string {
	label := f.Name
	if f.Title != "" && f.Title != f.Name {
		label = f.Title + " [" + f.Name + "]"
	}
	var notes []string
	if f.Type != "" {
		notes = append(notes, f.Type)
	}
	if f.Required {
		notes = append(notes, "required")
	}
	if len(f.Enum) > 0 {
		notes = append(notes, "one of "+strings.Join(f.Enum, ", "))
	}
	s := "  " + label
	if f.Description != "" {
		s += ", " + truncate(f.Description, 80)
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s + ": "
}

// convertAnswer converts typed text to the field's JSON type.
func convertAnswer(f schemaField, text string) (any, error) {
	if len(f.Enum) > 0 && f.Type != "array" && !slices.Contains(f.Enum, text) {
		return nil, fmt.Errorf("want one of %s", strings.Join(f.Enum, ", "))
	}
	switch f.Type {
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		return n, nil
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("want yes or no")
	case "array":
		parts := strings.Split(text, ",")
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return text, nil
}
