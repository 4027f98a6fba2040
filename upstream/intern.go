package upstream

import (
	"encoding/json"
	"unique"
	"unsafe"
)

// Sessions to the same server (per-tenant copies of one config, several
// configs of one URL) list the same tools, and each would keep its own copy
// of every description and schema for its whole life: about 4 KiB per
// session for a small server, far more for one with long descriptions.
// A catalog keeps them interned instead: one copy per distinct content in
// the process, shared by every catalog that lists it.
//
// The table is the standard library's (unique.Make): lookups hash the
// content once, and an entry lives as long as a handle to it does. A
// catalog holds the handles of what it shares (interned), so a content is
// freed once no catalog lists it any more: a server that goes away, or
// changes its tools, leaves nothing behind. Servers that all differ gain
// nothing and pay a handle (8 bytes) per string.

// interned holds the handles of the strings a list shares. It is built
// once per listing and never modified after.
type interned []unique.Handle[string]

// string returns the process's copy of s.
func (in *interned) string(s string) string {
	if s == "" {
		return s
	}
	h := unique.Make(s)
	*in = append(*in, h)
	return h.Value()
}

// json returns the process's copy of b. The bytes are shared: like
// everything in a catalog, they must never be modified (encoding/json only
// reads a json.RawMessage it marshals or unmarshals).
func (in *interned) json(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	// unique.Make copies what it does not hold yet, so b need not be
	// copied to be looked up.
	s := in.string(unsafe.String(&b[0], len(b)))
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
