package httpapi

import (
	"slices"
	"strings"
	"testing"
)

// TestNewLinesOfARing: the lines a log ring gained between two looks,
// while it grows, once it is full and turns, and when it was replaced.
func TestNewLinesOfARing(t *testing.T) {
	l := func(s string) []string { return strings.Fields(s) }
	for _, tc := range []struct{ prev, cur, want string }{
		{"", "", ""},
		{"", "a b", "a b"},
		{"a b", "a b", ""},
		{"a b", "a b c d", "c d"},
		{"a b c", "b c d", "d"},       // full: one line in, one out
		{"a b c", "c d e", "d e"},     // two in
		{"a b c", "x y z", "x y z"},   // turned over entirely, or a new session
		{"a b c", "", ""},             // disabled: nothing kept
		{"a b a b", "a b a b x", "x"}, // repeats
		{"x x x", "x x x", ""},        // indistinguishable: not new
	} {
		if got := newLines(l(tc.prev), l(tc.cur)); !slices.Equal(got, l(tc.want)) {
			t.Errorf("newLines(%q, %q) = %q, want %q", tc.prev, tc.cur, got, tc.want)
		}
	}
}
