package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Aggregated names are "<server>__<name>": what LLM APIs accept, at most 64
// characters of [A-Za-z0-9_-]. Server names cannot contain "__", so the
// first "__" separates the two parts of a name that needed no change.
const (
	maxNameLen = 64
	separator  = "__"
	hashLen    = 8
)

// aggregateName returns the exposed name of an upstream server's tool or
// prompt. It depends on nothing but its inputs: a name that is valid and
// short enough is kept as is; any other is made valid, cut, and suffixed
// with a hash of the original, so two different originals never share a
// name by accident and the same original always gets the same one.
func aggregateName(server, name string) string {
	full := server + separator + name
	clean := sanitize(full)
	if clean == full && len(full) <= maxNameLen {
		return full
	}
	h := sha256.Sum256([]byte(server + "/" + name))
	suffix := "_" + hex.EncodeToString(h[:])[:hashLen]
	return clean[:min(len(clean), maxNameLen-len(suffix))] + suffix
}

// sanitize replaces every character outside [A-Za-z0-9_-] with '-'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// ValidName reports whether name is acceptable to LLM APIs:
// ^[A-Za-z0-9_-]{1,64}$.
func ValidName(name string) bool {
	return name != "" && len(name) <= maxNameLen && sanitize(name) == name
}
