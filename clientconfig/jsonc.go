package clientconfig

import (
	"bytes"
	"fmt"
)

// stripJSONC turns JSON with comments and trailing commas (the "JSONC" that
// VS Code writes and accepts) into plain JSON.
//
// It blanks out `//` line comments, `/* */` block comments, trailing commas
// before `}` or `]`, and a leading UTF-8 byte-order mark by overwriting them
// with spaces, never by deleting bytes: the output has the same length and the
// same line breaks as the input, so the offsets in a later decoding error
// still point at the right line and column of the file the user sees.
//
// String literals are copied untouched, including `//`, `/*`, commas and
// escaped quotes inside them. Anything else that is not valid JSON is left for
// the JSON decoder to report. The only error is an unterminated block comment,
// which would otherwise silently swallow the rest of the file.
func stripJSONC(in []byte) ([]byte, error) {
	out := bytes.Clone(in)
	if bytes.HasPrefix(out, []byte("\xEF\xBB\xBF")) {
		blank(out[:3])
	}

	// Pass 1: comments. Block comments may hide commas and brackets, so they
	// must be gone before pass 2 looks for trailing commas.
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			i = skipString(out, i)
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			j := i
			for j < len(out) && out[j] != '\n' && out[j] != '\r' {
				j++
			}
			blank(out[i:j])
			i = j - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				line, col := position(in, i)
				return nil, fmt.Errorf("unterminated /* comment starting at line %d, column %d", line, col)
			}
			j := i + 2 + end + 2
			blank(out[i:j])
			i = j - 1
		}
	}

	// Pass 2: trailing commas, now that only whitespace can sit between a
	// comma and the bracket that follows it.
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = skipString(out, i)
		case ',':
			j := i + 1
			for j < len(out) && isSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

// skipString returns the index of the quote that closes the string literal
// opening at b[i], or len(b)-1 if it never closes (the decoder reports that).
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++ // the escaped byte, which may be a quote
		case '"':
			return j
		}
	}
	return len(b) - 1
}

// blank overwrites b with spaces but keeps line breaks, so that line numbers
// stay correct after a multi-line block comment is removed.
func blank(b []byte) {
	for i, c := range b {
		if c != '\n' && c != '\r' {
			b[i] = ' '
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// position converts a byte offset into a 1-based line and column, for error
// messages a person can find in an editor.
func position(b []byte, off int) (line, col int) {
	if off > len(b) {
		off = len(b)
	}
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
