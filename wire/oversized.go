package wire

import (
	"bytes"
	"encoding/json"
)

// This file tells what a message over the limit was from the ends that
// were kept of it (event.head, event.tail): a server request, or the
// answer to which request. Legacy SSE carries every answer on one stream,
// so an oversized answer can fail its own request alone.

const (
	// peekHead and peekTail are how much of an oversized message's data is
	// kept to tell what it is: its first bytes (to parse) and its last
	// ones (for an id written after the result, as the TypeScript SDK
	// writes it).
	peekHead = 4 << 10
	peekTail = 512
)

// appendTail returns the last peekTail bytes of tail followed by p.
func appendTail(tail, p []byte) []byte {
	if len(p) >= peekTail {
		return append(tail[:0], p[len(p)-peekTail:]...)
	}
	if over := len(tail) + len(p) - peekTail; over > 0 {
		tail = append(tail[:0], tail[over:]...)
	}
	return append(tail, p...)
}

// msgKind is what a message is, as far as the bytes at hand tell.
type msgKind uint8

const (
	kindUnknown  msgKind = iota
	kindResponse         // "result" or "error": an answer to a request
	kindRequest          // "method" or "params": a server request or a notification
)

// peek reads what it can of a JSON-RPC message from its first bytes: its
// kind, and its id if it comes before any nested value (the go-sdk and the
// Python SDK write it before the result). It stops at the first nested
// value, whose end is out of reach.
func peek(head []byte) (kind msgKind, id json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown, nil
	}
	for range 16 { // a JSON-RPC message has four members; a few more are passed over
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return kind, id
		}
		switch key {
		case "result", "error":
			kind = kindResponse
		case "method", "params":
			kind = kindRequest
		}
		v, err := dec.Token()
		if err != nil {
			return kind, id
		}
		switch v := v.(type) {
		case json.Delim:
			return kind, id
		case json.Number:
			if key == "id" {
				id = json.RawMessage(v)
			}
		case string:
			if key == "id" {
				id, _ = json.Marshal(v)
			}
		}
	}
	return kind, id
}

// idFromTail returns the id that ends a message, as the TypeScript SDK
// writes its responses ({"result":{...},"jsonrpc":"2.0","id":5}), read
// backwards from its last bytes: `"id": VALUE }` at the very end, the key
// after a comma, so that it is a member of the outermost object (the last
// brace of valid JSON closes it).
func idFromTail(tail []byte) json.RawMessage {
	i := trimSpaceEnd(tail, len(tail))
	if i == 0 || tail[i-1] != '}' {
		return nil
	}
	end := trimSpaceEnd(tail, i-1)
	if end == 0 {
		return nil
	}
	start := end - 1
	if tail[start] == '"' {
		for start--; start >= 0; start-- {
			if tail[start] != '"' {
				continue
			}
			slashes := 0
			for k := start - 1; k >= 0 && tail[k] == '\\'; k-- {
				slashes++
			}
			if slashes%2 == 0 {
				break
			}
		}
		if start < 0 {
			return nil
		}
	} else {
		for start > 0 && (tail[start-1] == '-' || tail[start-1] >= '0' && tail[start-1] <= '9') {
			start--
		}
	}
	val := tail[start:end]
	j := trimSpaceEnd(tail, start)
	if j == 0 || tail[j-1] != ':' {
		return nil
	}
	j = trimSpaceEnd(tail, j-1)
	if j < len(`"id"`) || string(tail[j-len(`"id"`):j]) != `"id"` {
		return nil
	}
	j = trimSpaceEnd(tail, j-len(`"id"`))
	if j == 0 || tail[j-1] != ',' || !json.Valid(val) {
		return nil
	}
	return json.RawMessage(bytes.Clone(val))
}

// trimSpaceEnd returns the end of b[:i] without its trailing JSON spaces.
func trimSpaceEnd(b []byte, i int) int {
	for i > 0 && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n' || b[i-1] == '\r') {
		i--
	}
	return i
}
