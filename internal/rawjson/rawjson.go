// Package rawjson finds the members of a JSON object without decoding it:
// the relay (gateway/relay.go, upstream/relay.go) reads a message's id,
// method and a few params from the bytes and passes the rest on untouched.
//
// What it walks it validates as encoding/json would (except that invalid
// UTF-8 passes through, as it does in the go-sdk's decoder), so an object
// that Members walks to its end is valid JSON. Keys are compared as they
// are written, escapes and all, so a key spelled with escapes is not
// found: the callers then take the slow path, which decodes.
//
// Decode, with the same walk, decodes JSON into what encoding/json gives an
// `any`, several times faster: a tool's arguments are decoded on every
// call for the schema check (upstream/arguments.go).
package rawjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// ErrSyntax is returned for input that is not a JSON object as far as the
// scanner walked it.
var ErrSyntax = errors.New("rawjson: not a JSON object")

// Members calls fn with the key (as written, without quotes) and the raw
// value of each member of the object b, in order, until fn returns false.
func Members(b []byte, fn func(key, val []byte) bool) error {
	i := space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrSyntax
	}
	i = space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ErrSyntax
		}
		kend, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : kend-1]
		i = space(b, kend)
		if i >= len(b) || b[i] != ':' {
			return ErrSyntax
		}
		i = space(b, i+1)
		vend, err := skip(b, i, 1)
		if err != nil {
			return err
		}
		if !fn(key, b[i:vend]) {
			return nil
		}
		next, end, err := separator(b, vend, '}')
		if err != nil {
			return err
		}
		if end {
			return trailing(b, next)
		}
		i = next
	}
}

// Get returns the raw value of the member key of the object b.
func Get(b []byte, key string) ([]byte, bool) {
	var found []byte
	ok := false
	err := Members(b, func(k, v []byte) bool {
		if string(k) == key {
			found, ok = v, true
			return false
		}
		return true
	})
	return found, ok && err == nil
}

// Contains reports whether sep is within b, as bytes.Contains does, at a
// cost that the quotes of JSON do not multiply. bytes.Index gives up
// skipping from one occurrence of sep's first byte to the next when the
// first ones it finds do not start sep, and compares sep at every byte
// that follows; sep here is mostly a key or a value, quotes and all, and a
// message begins dense with quotes ({"jsonrpc":"2.0","id":...), so a
// search that fails (nearly every one) compared at each byte of the long
// string that follows: some 17,000 instructions for a 1 KiB result.
// Contains keeps skipping: a compare per quote.
func Contains(b, sep []byte) bool {
	if len(sep) == 0 {
		return true
	}
	for len(b) >= len(sep) {
		i := bytes.IndexByte(b[:len(b)-len(sep)+1], sep[0])
		if i < 0 {
			return false
		}
		if bytes.Equal(b[i:i+len(sep)], sep) {
			return true
		}
		b = b[i+1:]
	}
	return false
}

// maxDepth bounds the nesting skip follows (as the go-sdk bounds its
// decoder's), so that no input can exhaust the stack.
const maxDepth = 1000

func skip(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		return skipObject(b, i, depth+1)
	case c == '[':
		return skipArray(b, i, depth+1)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return 0, ErrSyntax
}

// String returns the contents of the JSON string v if it has no escapes.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return string(v[1 : len(v)-1]), true
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString returns the end of the string that starts at b[i] (a quote).
// It looks for the next quote and the next backslash with IndexByte,
// which reads many bytes an instruction, and checks what lies between for
// control characters 8 bytes at a time: a 1 KiB string without escapes
// costs about one instruction a byte (a loop over 8 bytes at a time that
// looked for all three was five). The quote found is kept until an escape
// passes it, so that a long string of many escapes is still read once.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	q := -1 // the first quote at or after j, once found
	for {
		if q < j {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return 0, ErrSyntax
			}
			q = j + k
		}
		// b[j:q] holds no quote; it is plain up to its first backslash.
		e := q
		if k := bytes.IndexByte(b[j:q], '\\'); k >= 0 {
			e = j + k
		}
		if control(b[j:e]) {
			return 0, ErrSyntax
		}
		if e == q {
			return q + 1, nil
		}
		j = e + 1 // the escaped byte: there is one, since e < q
		switch b[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if j+4 >= len(b) || !hex(b[j+1]) || !hex(b[j+2]) || !hex(b[j+3]) || !hex(b[j+4]) {
				return 0, ErrSyntax
			}
			j += 4
		default:
			return 0, ErrSyntax
		}
		j++
	}
}

// control reports whether s holds a control character (a byte below
// 0x20), which a JSON string may not. A word's bytes below 0x20 are those
// whose high bit (x - 0x20 each) &^ x sets ("Bit Twiddling Hacks",
// hasless), exactly as long as the test is of whether there is one.
func control(s []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var below uint64
	for ; len(s) >= 32; s = s[32:] {
		w, x, y, z := binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[8:]),
			binary.LittleEndian.Uint64(s[16:]), binary.LittleEndian.Uint64(s[24:])
		below |= (w-ones*0x20)&^w | (x-ones*0x20)&^x | (y-ones*0x20)&^y | (z-ones*0x20)&^z
	}
	for ; len(s) >= 8; s = s[8:] {
		x := binary.LittleEndian.Uint64(s)
		below |= (x - ones*0x20) &^ x
	}
	if below&highs != 0 {
		return true
	}
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber returns the end of the number that starts at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j = digits(b, j)
	default:
		return 0, ErrSyntax
	}
	if j < len(b) && b[j] == '.' {
		k := digits(b, j+1)
		if k == j+1 {
			return 0, ErrSyntax
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(b, j)
		if k == j {
			return 0, ErrSyntax
		}
		j = k
	}
	return j, nil
}

func digits(b []byte, j int) int {
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j
}

// skipObject returns the end of the object that starts at b[i].
func skipObject(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, ErrSyntax
	}
	j := space(b, i+1)
	if j < len(b) && b[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return 0, ErrSyntax
		}
		keyEnd, err := skipString(b, j)
		if err != nil {
			return 0, err
		}
		j = space(b, keyEnd)
		if j >= len(b) || b[j] != ':' {
			return 0, ErrSyntax
		}
		if j, err = skip(b, space(b, j+1), depth); err != nil {
			return 0, err
		}
		next, done, err := separator(b, j, '}')
		if err != nil || done {
			return next, err
		}
		j = next
	}
}

// skipArray returns the end of the array that starts at b[i].
func skipArray(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, ErrSyntax
	}
	j := space(b, i+1)
	if j < len(b) && b[j] == ']' {
		return j + 1, nil
	}
	for {
		var err error
		if j, err = skip(b, j, depth); err != nil {
			return 0, err
		}
		next, end, err := separator(b, j, ']')
		if err != nil || end {
			return next, err
		}
		j = next
	}
}

// separator reads what follows a member or an element that ends at b[j]:
// a comma, after which the next one starts at next, or the closing byte
// of its object or array, after which next is.
func separator(b []byte, j int, closing byte) (next int, end bool, err error) {
	j = space(b, j)
	switch {
	case j >= len(b):
		return 0, false, ErrSyntax
	case b[j] == ',':
		return space(b, j+1), false, nil
	case b[j] == closing:
		return j + 1, true, nil
	}
	return 0, false, ErrSyntax
}

func literal(b []byte, i int, word string) (int, error) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return 0, ErrSyntax
	}
	return i + len(word), nil
}

func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func trailing(b []byte, i int) error {
	if space(b, i) != len(b) {
		return ErrSyntax
	}
	return nil
}

// AppendString appends s to dst as a JSON string. A string of printable
// ASCII that needs no escape, what tool names and the relay's own tokens
// are, is copied between quotes; any other goes through encoding/json,
// which escapes it as it escapes every string the relay would otherwise
// have encoded (and replaces invalid UTF-8 with U+FFFD).
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !plain[c] || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
