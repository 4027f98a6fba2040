package render

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// Much of what the CLI prints comes from upstream servers: tool names and
// descriptions, results, error messages, stderr lines. A server could put
// terminal control sequences there (clear the screen, set the window title,
// rewrite a line with \r, reverse text with U+202E) to make the terminal
// show something other than what it said. Everything the CLI writes goes
// through a TerminalWriter, which renders such characters escaped.

// TerminalWriter writes to w with control characters escaped as \uXXXX:
// C0 controls other than newline and tab (ESC and CR included), DEL, C1
// controls and the Unicode bidirectional controls. The escape is also valid
// inside a JSON string, so -o json output stays JSON (encoding/json already
// escapes C0 itself). It is not safe for concurrent use.
type TerminalWriter struct {
	w       io.Writer
	partial []byte // the start of a rune cut by the end of a Write
}

func NewTerminalWriter(w io.Writer) *TerminalWriter { return &TerminalWriter{w: w} }

// Unfiltered returns the writer underneath, for output that is made safe
// by its writer (the progress bar, which redraws its line with \r).
func (t *TerminalWriter) Unfiltered() io.Writer { return t.w }

func (t *TerminalWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.partial) > 0 {
		p = append(t.partial, p...)
		t.partial = nil
	}
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(p) {
			t.partial = append([]byte(nil), p...) // wait for the rest of the rune
			break
		}
		if unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, p[:size]...)
		}
		p = p[size:]
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// unsafeRune reports whether r changes what a terminal shows instead of
// showing itself.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n', r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// SafeLine returns s with every character that unsafeRune names
// escaped, newlines and tabs too: for text that must stay on one line.
func SafeLine(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\t' || unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

// IsTerminalWriter reports whether w writes to a terminal, looking through
// a TerminalWriter.
func IsTerminalWriter(w io.Writer) bool {
	if t, ok := w.(interface{ Unfiltered() io.Writer }); ok {
		w = t.Unfiltered()
	}
	f, ok := w.(*os.File)
	return ok && IsTerminal(f)
}

// IsTerminal reports whether f is a terminal: a character device other
// than /dev/null (which is a character device too, but nobody reads it).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
