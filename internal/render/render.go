package render

// This file holds what every view is made of: aligned tables, indented
// JSON, table cells and times, and streams printed until they end.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Table returns a tabwriter for tab-separated rows; call Flush.
func Table(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

// RawJSON prints a JSON document indented, as the API sent it.
func RawJSON(out io.Writer, raw []byte) error {
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

// JSON prints v as indented JSON.
func JSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// OrDash returns s, or "-" when it is empty, for table cells.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Time prints a time with how long ago (or from now) it is.
func Time(t time.Time, now time.Time) string {
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

// Stream prints what next yields until the stream ends, or ctx does
// (Ctrl-C, which is not an error here). The end of the stream is atEOF
// (nil: a normal end).
func Stream[T any](ctx context.Context, next func() (T, error), atEOF error, print func(T) error) error {
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

// Format is the value of -o/--output: FormatText (the default),
// FormatWide or FormatJSON; a flag.Value.
type Format string

// The output formats.
const (
	FormatText = "text"
	FormatWide = "wide"
	FormatJSON = "json"
)

// String, Set and Type make a *Format a pflag.Value.
func (o *Format) String() string {
	if *o == "" {
		return FormatText
	}
	return string(*o)
}

func (o *Format) Set(v string) error {
	switch v {
	case FormatText, FormatWide, FormatJSON:
		*o = Format(v)
		return nil
	}
	return fmt.Errorf("want text, wide or json")
}

func (o *Format) Type() string { return "format" }

// Lines prints lines, each ended by a newline, in one write.
func Lines(out io.Writer, lines []string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}
