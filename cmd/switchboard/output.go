package main

// This file renders what the client verbs print: aligned tables, indented
// JSON, tool results, and the progress bar of a call.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	sb "github.com/switchboard-mcp/switchboard"
)

// printInfo prints the runtime info a check or a test session reached:
// status, transport, protocol, server info and tools, or the error with
// its phase and code and the last lines the server wrote to stderr.
func printInfo(out io.Writer, info sb.RuntimeInfo, logs []string, failed bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	if failed && info.Error != nil {
		row("status", "error")
		row("phase", string(info.Error.Phase))
		row("code", string(info.Error.Code))
		row("error", info.Error.Message)
	} else {
		row("status", string(info.Status))
		row("transport", string(info.Transport))
		row("protocol", info.ProtocolVersion)
		if info.ServerInfo != nil {
			row("server", strings.TrimSpace(info.ServerInfo.Name+" "+info.ServerInfo.Version))
		}
		row("tools", fmt.Sprint(info.ToolCount))
		row("resources", fmt.Sprint(info.ResourceCount))
		row("prompts", fmt.Sprint(info.PromptCount))
	}
	tw.Flush()
	if !failed && len(info.Tools) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
		for _, t := range info.Tools {
			fmt.Fprintf(tw, "%s\t%s\n", t.Name, firstLine(t.Description, 80))
		}
		tw.Flush()
	}
	if failed && len(logs) > 0 {
		fmt.Fprintln(out, "\nlast stderr lines:")
		for _, l := range logs[max(0, len(logs)-10):] {
			fmt.Fprintln(out, "  "+l)
		}
	}
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

// newTable returns a tabwriter for tab-separated rows; call Flush.
func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

// printRawJSON prints a JSON document indented, as the API sent it.
func printRawJSON(out io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		// Not JSON after all: print it unchanged rather than lose it.
		b.Reset()
		b.Write(raw)
	}
	b.WriteByte('\n')
	_, err := out.Write(b.Bytes())
	return err
}

// printJSON prints v as indented JSON.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// orDash returns s, or "-" when it is empty, for table cells.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatTime prints a time with how long ago (or from now) it is.
func formatTime(t time.Time, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t).Round(time.Second)
	rel := d.String() + " ago"
	if d < 0 {
		rel = "in " + (-d).String()
	}
	return t.Local().Format(time.DateTime) + " (" + rel + ")"
}

// isTerminal reports whether f is a terminal: a character device other
// than /dev/null (which is a character device too, but nobody reads it).
// isTerminalWriter reports whether w writes to a terminal, looking through
// a terminalWriter.
func isTerminalWriter(w io.Writer) bool {
	if t, ok := w.(interface{ Unfiltered() io.Writer }); ok {
		w = t.Unfiltered()
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// toolResult is the part of an MCP CallToolResult that is printed. It is
// decoded here rather than with the SDK's type so that a content kind this
// binary does not know yet is summarised, not an error.
type toolResult struct {
	Content           []resultContent `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// resultContent is one content block of a tool result.
type resultContent struct {
	Type     string           `json:"type"`
	Text     string           `json:"text,omitempty"`
	Data     string           `json:"data,omitempty"` // base64
	MIMEType string           `json:"mimeType,omitempty"`
	URI      string           `json:"uri,omitempty"`
	Name     string           `json:"name,omitempty"`
	Resource *resourceContent `json:"resource,omitempty"`
}

// resourceContent is the resource of an embedded resource content.
type resourceContent struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"` // base64
}

// printToolResult prints a tool result for a person, once: text contents
// as text, one per line, and other contents as a one-line summary. The
// structured content (JSON for programs) is printed, indented, only when
// no text content says anything: tools that return both give the same
// data twice (the spec has them repeat it as text for older clients, and
// SDKs write it there), so the text alone is printed. A text content that
// is the structured content's JSON is printed as the indented JSON.
func printToolResult(out io.Writer, res *toolResult) error {
	var structured any
	hasStructured := len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" &&
		json.Unmarshal(res.StructuredContent, &structured) == nil
	indented := func() string {
		var ind bytes.Buffer
		if json.Indent(&ind, res.StructuredContent, "", "  ") != nil {
			return string(res.StructuredContent)
		}
		return ind.String()
	}
	var b strings.Builder
	hasText := false
	for _, c := range res.Content {
		if c.Type == "text" {
			hasText = true
			if hasStructured && sameJSON(c.Text, structured) {
				b.WriteString(indented())
				b.WriteByte('\n')
				hasStructured = false // printed
				continue
			}
		}
		b.WriteString(describeContent(c))
		b.WriteByte('\n')
	}
	if hasStructured && !hasText {
		b.WriteString(indented())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// sameJSON reports whether text is JSON equal to v.
func sameJSON(text string, v any) bool {
	var t any
	return json.Unmarshal([]byte(text), &t) == nil && reflect.DeepEqual(t, v)
}

// describeContent returns a text content's text, or a one-line summary of
// any other content, e.g. "[image image/png, 8 bytes]".
func describeContent(c resultContent) string {
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return fmt.Sprintf("[%s %s, %s]", c.Type, orDash(c.MIMEType), byteCount(base64Len(c.Data)))
	case "resource_link":
		s := "[resource link " + c.URI
		if c.Name != "" {
			s += " " + strconv.Quote(c.Name)
		}
		if c.MIMEType != "" {
			s += " " + c.MIMEType
		}
		return s + "]"
	case "resource":
		if c.Resource == nil {
			return "[resource]"
		}
		size := len(c.Resource.Text)
		if c.Resource.Blob != "" {
			size = base64Len(c.Resource.Blob)
		}
		return fmt.Sprintf("[resource %s %s, %s]", c.Resource.URI, orDash(c.Resource.MIMEType), byteCount(size))
	}
	return fmt.Sprintf("[%s content]", orDash(c.Type))
}

// base64Len is the decoded length of standard base64 data.
func base64Len(s string) int {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(b)
	}
	return base64.StdEncoding.DecodedLen(len(s))
}

func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}

// progressBar draws a call's progress on one terminal line, redrawn in
// place with "\r":
//
//	[=====>    ] 3/5 step 3/5
//
// With no total it shows the count and message only.
type progressBar struct {
	out   io.Writer
	width int // of the bar, between the brackets
	cols  int // of the terminal; lines are cut to fit
	drawn int // runes on the line now, to blank out on the next draw
}

// newProgressBar returns a bar that draws on out, a terminal. It writes
// its own \r, so it draws beneath the terminalWriter, and escapes the
// server's messages itself.
func newProgressBar(out io.Writer) *progressBar {
	if t, ok := out.(interface{ Unfiltered() io.Writer }); ok {
		out = t.Unfiltered()
	}
	cols := 80
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 20 {
		cols = n
	}
	return &progressBar{out: out, width: 30, cols: cols}
}

// render returns the bar's line for one progress report.
func (p *progressBar) render(progress, total float64, message string) string {
	var b strings.Builder
	if total > 0 {
		frac := min(max(progress/total, 0), 1)
		filled := int(frac * float64(p.width))
		b.WriteByte('[')
		switch {
		case filled >= p.width:
			b.WriteString(strings.Repeat("=", p.width))
		case filled > 0:
			b.WriteString(strings.Repeat("=", filled-1) + ">" + strings.Repeat(" ", p.width-filled))
		default:
			b.WriteString(strings.Repeat(" ", p.width))
		}
		fmt.Fprintf(&b, "] %s/%s", formatNumber(progress), formatNumber(total))
	} else {
		fmt.Fprintf(&b, "[%s]", formatNumber(progress))
	}
	if message != "" {
		b.WriteByte(' ')
		b.WriteString(terminalSafe(message))
	}
	line := b.String()
	if r := []rune(line); len(r) > p.cols-1 {
		line = string(r[:p.cols-1])
	}
	return line
}

// Draw redraws the line for one progress report.
func (p *progressBar) Draw(progress, total float64, message string) {
	line := p.render(progress, total, strings.Join(strings.Fields(message), " "))
	n := utf8.RuneCountInString(line)
	pad := ""
	if n < p.drawn {
		pad = strings.Repeat(" ", p.drawn-n)
	}
	fmt.Fprintf(p.out, "\r%s%s", line, pad)
	if pad != "" {
		fmt.Fprintf(p.out, "\r%s", line)
	}
	p.drawn = n
}

// Clear blanks the line, if anything is drawn, leaving the cursor at its
// start.
func (p *progressBar) Clear() {
	if p == nil || p.drawn == 0 {
		return
	}
	fmt.Fprintf(p.out, "\r%s\r", strings.Repeat(" ", p.drawn))
	p.drawn = 0
}

// progressLines prints a call's progress as lines, for a log or a pipe:
//
//	progress 3/5: step 3/5
//
// at most two a second (the first at once), so that a server reporting
// progress a thousand times a second does not flood it.
type progressLines struct {
	out  io.Writer
	last time.Time
	now  func() time.Time
}

// progressLineInterval is the least time between two progress lines.
const progressLineInterval = 500 * time.Millisecond

func newProgressLines(out io.Writer) *progressLines {
	return &progressLines{out: out, now: time.Now}
}

// Print prints one progress report, unless one was printed less than
// progressLineInterval ago.
func (p *progressLines) Print(progress, total float64, message string) {
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < progressLineInterval {
		return
	}
	p.last = now
	line := "progress " + formatNumber(progress)
	if total > 0 {
		line += "/" + formatNumber(total)
	}
	if m := strings.Join(strings.Fields(message), " "); m != "" {
		line += ": " + m
	}
	fmt.Fprintln(p.out, line)
}

// formatNumber prints a progress value without a pointless ".000000".
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// printStream prints what next yields until the stream ends, or ctx does
// (Ctrl-C, which is not an error here). The end of the stream is atEOF
// (nil: a normal end).
func printStream[T any](ctx context.Context, next func() (T, error), atEOF error, print func(T) error) error {
	for {
		v, err := next()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			return atEOF
		case err != nil:
			return err
		}
		if err := print(v); err != nil {
			return err
		}
	}
}
