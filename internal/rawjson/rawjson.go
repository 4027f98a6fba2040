// Package rawjson finds the members of a JSON object without decoding it:
// the relay (gateway/relay.go, upstream/relay.go) reads a message's id,
// method and a few params from the bytes and passes the rest on untouched.
//
// It checks only as much syntax as it walks: the value it returns is well
// formed as far as its brackets and strings go, and the parts it skips are
// checked no further (the peer that decodes them does). Keys are compared
// as they are written, escapes and all, so a key spelled with escapes is
// not found: the callers then take the slow path, which decodes.
package rawjson

import "errors"

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
		vend, err := Skip(b, i)
		if err != nil {
			return err
		}
		if !fn(key, b[i:vend]) {
			return nil
		}
		i = space(b, vend)
		if i >= len(b) {
			return ErrSyntax
		}
		switch b[i] {
		case ',':
			i = space(b, i+1)
		case '}':
			return trailing(b, i+1)
		default:
			return ErrSyntax
		}
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

// Skip returns the end of the value that starts at b[i].
func Skip(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		return skipNested(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
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

// skipString returns the end of the string that starts at b[i] (a quote).
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, ErrSyntax
		}
	}
	return 0, ErrSyntax
}

// skipNested returns the end of the object or array that starts at b[i],
// matching brackets and skipping strings.
func skipNested(b []byte, i int) (int, error) {
	var stack []byte // the closing brackets expected, innermost last
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			end, err := skipString(b, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, ErrSyntax
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, ErrSyntax
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
