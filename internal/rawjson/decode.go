package rawjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Decode returns the value encoding/json.Unmarshal stores in an `any` for
// b: a map[string]any, []any, string, float64, bool or nil, the same in
// every detail (empty objects and arrays are not nil, a repeated key keeps
// its last value). ok is false when b is not valid JSON, nests deeper than
// this package follows, or holds a number a float64 cannot hold; encoding/json
// then says what is wrong with it.
//
// It walks b once, without reflection: a tool's arguments are decoded on
// every call, for the schema check, and a 32 KiB string took
// encoding/json's validating pass and its decoding pass, each slower than
// this one.
func Decode(b []byte) (v any, ok bool) {
	v, end, ok := decode(b, space(b, 0), 0)
	if !ok || space(b, end) != len(b) {
		return nil, false
	}
	return v, true
}

func decode(b []byte, i, depth int) (any, int, bool) {
	if i >= len(b) {
		return nil, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, err := skipString(b, i)
		if err != nil {
			return nil, 0, false
		}
		s, ok := unquote(b[i:end])
		return s, end, ok
	case c == '{':
		return decodeObject(b, i, depth+1)
	case c == '[':
		return decodeArray(b, i, depth+1)
	case c == 't':
		end, err := literal(b, i, "true")
		return true, end, err == nil
	case c == 'f':
		end, err := literal(b, i, "false")
		return false, end, err == nil
	case c == 'n':
		end, err := literal(b, i, "null")
		return nil, end, err == nil
	case c == '-' || (c >= '0' && c <= '9'):
		end, err := skipNumber(b, i)
		if err != nil {
			return nil, 0, false
		}
		f, err := strconv.ParseFloat(string(b[i:end]), 64)
		return f, end, err == nil
	}
	return nil, 0, false
}

func decodeObject(b []byte, i, depth int) (any, int, bool) {
	if depth > maxDepth {
		return nil, 0, false
	}
	m := map[string]any{}
	j := space(b, i+1)
	if j < len(b) && b[j] == '}' {
		return m, j + 1, true
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return nil, 0, false
		}
		keyEnd, err := skipString(b, j)
		if err != nil {
			return nil, 0, false
		}
		key, ok := unquote(b[j:keyEnd])
		if !ok {
			return nil, 0, false
		}
		j = space(b, keyEnd)
		if j >= len(b) || b[j] != ':' {
			return nil, 0, false
		}
		v, end, ok := decode(b, space(b, j+1), depth)
		if !ok {
			return nil, 0, false
		}
		m[key] = v
		next, done, err := separator(b, end, '}')
		if err != nil {
			return nil, 0, false
		}
		if done {
			return m, next, true
		}
		j = next
	}
}

func decodeArray(b []byte, i, depth int) (any, int, bool) {
	if depth > maxDepth {
		return nil, 0, false
	}
	a := []any{}
	j := space(b, i+1)
	if j < len(b) && b[j] == ']' {
		return a, j + 1, true
	}
	for {
		v, end, ok := decode(b, j, depth)
		if !ok {
			return nil, 0, false
		}
		a = append(a, v)
		next, done, err := separator(b, end, ']')
		if err != nil {
			return nil, 0, false
		}
		if done {
			return a, next, true
		}
		j = next
	}
}

// unquote returns the string the JSON string q (quotes included, valid)
// stands for. Only one with escapes, or with bytes that are not UTF-8
// (which encoding/json turns into U+FFFD), is left to encoding/json.
func unquote(q []byte) (string, bool) {
	s := q[1 : len(q)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s), true
	}
	var out string
	return out, json.Unmarshal(q, &out) == nil
}
