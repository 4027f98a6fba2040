package switchboard

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Toolset is a named selection of the tools, prompts and resources of one
// or more servers, served at /toolsets/{name}/mcp: a client of it can list,
// call, read, get and complete what the toolset selects and nothing else.
// The JSON field names are part of Switchboard's outward contract.
//
// Each selector names a server and an item by exact name or by pattern
// ([MatchPattern]: '*' stands for any run of characters). A tool or
// prompt is exposed as "<server>__<name>", as on /mcp, unless its
// selector gives it another name (As).
type Toolset struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Tools       []Selector         `json:"tools,omitempty"`
	Prompts     []Selector         `json:"prompts,omitempty"`
	Resources   []ResourceSelector `json:"resources,omitempty"`
	// Mode is how the endpoint shows the tools: ModeCatalog (or empty),
	// each tool listed; ModeSearch, two tools that find and call the
	// selected ones (docs/tool-search.md).
	Mode string `json:"mode,omitempty"`
}

// Modes of a toolset's (and /mcp's) endpoint.
const (
	// ModeCatalog lists every tool the endpoint shows.
	ModeCatalog = "catalog"
	// ModeSearch lists two tools instead, search_tools and call_tool,
	// through which a client finds and calls the tools the endpoint shows.
	ModeSearch = "search"
)

// Selector picks tools (or prompts) of servers, and may change how a tool
// picked by exact name is shown.
type Selector struct {
	// Server is a server name or pattern ("*" is every server).
	Server string `json:"server"`
	// Tool is a tool name or pattern as the server names it; in a
	// prompts selector, a prompt name or pattern. The contract calls the
	// field "tool" for both kinds.
	Tool string `json:"tool"`
	// As is the name the item is exposed under; only for an exact Tool.
	// It may not contain "__", which marks the aggregated names, so it
	// can never collide with an item exposed under its default name.
	As string `json:"as,omitempty"`
	// Description replaces the item's description; only for an exact Tool.
	Description string `json:"description,omitempty"`
	// Annotations override the tool's annotations field by field (tools
	// only).
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// ResourceSelector picks resources and resource templates of servers by
// URI (a template by its URI template text).
type ResourceSelector struct {
	Server string `json:"server"` // a server name or pattern
	URI    string `json:"uri"`    // a URI or pattern
}

// ToolAnnotations are the hints of an MCP tool that a toolset may set; a
// nil field keeps the server's.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Kind is what a toolset selects: a tool, a prompt or a resource.
type Kind string

// Kinds of item a toolset selects.
const (
	KindTool     Kind = "tool"
	KindPrompt   Kind = "prompt"
	KindResource Kind = "resource" // named by URI, or a template by its URI template
)

// Allows is the one decision of what a toolset lets its clients see and
// use: whether the item name (a tool or prompt name as its server names
// it, or a resource URI) of server is selected. Every path of a toolset
// endpoint goes through it: listing, calls, prompts/get, resources/read,
// subscriptions and completion, on every protocol version. A nil toolset
// allows nothing.
func (t *Toolset) Allows(kind Kind, server, name string) bool {
	_, ok := t.Select(kind, server, name)
	return ok
}

// Select returns the selector that picks name of server, and whether one
// does. A selector by exact name wins over patterns (so its overrides
// apply); among patterns, the first in order.
func (t *Toolset) Select(kind Kind, server, name string) (Selector, bool) {
	if t == nil {
		return Selector{}, false
	}
	switch kind {
	case KindTool, KindPrompt:
		sels := t.Tools
		if kind == KindPrompt {
			sels = t.Prompts
		}
		var found *Selector
		for i := range sels {
			s := &sels[i]
			if !MatchPattern(s.Server, server) || !MatchPattern(s.Tool, name) {
				continue
			}
			if !IsPattern(s.Tool) {
				return *s, true
			}
			if found == nil {
				found = s
			}
		}
		if found != nil {
			return *found, true
		}
	case KindResource:
		if !normalURI(name) {
			return Selector{}, false
		}
		for _, s := range t.Resources {
			if MatchPattern(s.Server, server) && MatchPattern(s.URI, name) {
				return Selector{Server: s.Server, Tool: s.URI}, true
			}
		}
	}
	return Selector{}, false
}

// normalURI reports whether uri's path is in its normal form, the only
// form a toolset's resource patterns are matched against: no "." or ".."
// segment, spelled out or percent-encoded (%2e), and no encoded slash or
// backslash (%2f, %5c) that a server could decode into one. A pattern
// such as file:///repo/docs/* matched file:///repo/docs/../secret and
// file:///repo/docs/%2e%2e/secret, which were forwarded as they were, for
// the server to resolve outside the pattern. Such a URI is refused rather
// than normalized: the server, not the gateway, decides what its URIs
// mean, and a client that means a file under the pattern can name it.
func normalURI(uri string) bool {
	path := uri
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	lower := strings.ToLower(path)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(path, "\\") {
		return false
	}
	lower = strings.ReplaceAll(lower, "%2e", ".")
	for seg := range strings.SplitSeq(lower, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// IsPattern reports whether s is a pattern rather than an exact name.
func IsPattern(s string) bool { return strings.Contains(s, "*") }

// MatchPattern reports whether name matches pattern, in which '*' matches
// any run of characters (none included) and every other byte itself. It
// runs in O(len(pattern)·len(name)) at worst, whatever the pattern: the
// classic greedy matcher that backtracks only to the last star.
func MatchPattern(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0 // the last '*' seen, and where in name it began to match
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			// Let the last star take one more byte and retry after it.
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Limits of a toolset, so that a typo cannot ask for something absurd.
const (
	maxSelectors   = 1024
	maxPatternLen  = 1024
	maxDescription = 4096
)

// Validate checks t against the contract and returns a *ValidationError
// naming every invalid field, or nil. It refuses at write time an exposed
// name that would collide: two selectors exposing one name, or a new name
// that looks like an aggregated one.
func (t *Toolset) Validate() error {
	var fs []*FieldError
	bad := func(field, format string, args ...any) {
		fs = append(fs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case t.Name == "":
		bad("name", "is required")
	case !nameRE.MatchString(t.Name):
		bad("name", "must be 1-48 characters of a-z, 0-9 and '-', starting with a letter or digit")
	}
	if len(t.Description) > maxDescription {
		bad("description", "is over %d bytes", maxDescription)
	}
	if t.Mode != "" && t.Mode != ModeCatalog && t.Mode != ModeSearch {
		bad("mode", "must be %q or %q", ModeCatalog, ModeSearch)
	}
	if n := len(t.Tools) + len(t.Prompts) + len(t.Resources); n > maxSelectors {
		bad("tools", "%d selectors in all; at most %d", n, maxSelectors)
	}
	validateSelectors("tools", t.Tools, true, bad)
	validateSelectors("prompts", t.Prompts, false, bad)
	for i, s := range t.Resources {
		field := fmt.Sprintf("resources[%d]", i)
		validatePattern(field+".server", s.Server, bad)
		validatePattern(field+".uri", s.URI, bad)
	}
	if len(fs) == 0 {
		return nil
	}
	return &ValidationError{Fields: fs}
}

// validateSelectors checks the selectors of one kind: patterns, overrides
// only where they make sense, and exposed names that are unique.
func validateSelectors(kind string, sels []Selector, tools bool, bad func(field, format string, args ...any)) {
	exposed := map[string]string{} // new name -> the field that claimed it
	for i, s := range sels {
		field := fmt.Sprintf("%s[%d]", kind, i)
		validatePattern(field+".server", s.Server, bad)
		validatePattern(field+".tool", s.Tool, bad)
		exact := !IsPattern(s.Server) && !IsPattern(s.Tool)
		if s.As != "" {
			switch {
			case !exact:
				bad(field+".as", "renames one item: its server and tool must be exact, not patterns")
			case !validExposedName(s.As):
				bad(field+".as", "must be 1-64 characters of A-Z, a-z, 0-9, '_' and '-' (what LLM APIs accept)")
			case strings.Contains(s.As, "__"):
				bad(field+".as", `may not contain "__", which marks the names "<server>__<name>" that other items are exposed under`)
			case exposed[s.As] != "":
				bad(field+".as", "%q is already the name of %s; every exposed name must be unique", s.As, exposed[s.As])
			default:
				exposed[s.As] = field
			}
		}
		if s.Description != "" && !exact {
			bad(field+".description", "describes one item: its server and tool must be exact, not patterns")
		}
		if len(s.Description) > maxDescription {
			bad(field+".description", "is over %d bytes", maxDescription)
		}
		if s.Annotations != nil && !tools {
			bad(field+".annotations", "only tools have annotations")
		}
	}
}

func validatePattern(field, p string, bad func(field, format string, args ...any)) {
	switch {
	case p == "":
		bad(field, `is required (a name, or a pattern such as "*")`)
	case len(p) > maxPatternLen:
		bad(field, "is over %d bytes", maxPatternLen)
	}
}

// validExposedName reports whether name is acceptable to LLM APIs:
// ^[A-Za-z0-9_-]{1,64}$.
func validExposedName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// Servers reports whether any selector of t could pick an item of server.
func (t *Toolset) Servers(server string) bool {
	for _, s := range t.Tools {
		if MatchPattern(s.Server, server) {
			return true
		}
	}
	for _, s := range t.Prompts {
		if MatchPattern(s.Server, server) {
			return true
		}
	}
	for _, s := range t.Resources {
		if MatchPattern(s.Server, server) {
			return true
		}
	}
	return false
}

// StoredToolset is a toolset as stored, with the version that guards
// concurrent edits.
type StoredToolset struct {
	Toolset   Toolset
	Version   int64 // 1 on create, +1 on every update
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ToolsetStore keeps toolsets, with the same guarantees as [Store] keeps
// servers: a write that names a version succeeds only if the stored
// version still matches. The sqlite and postgres stores implement it.
type ToolsetStore interface {
	// ListToolsets returns every toolset, ordered by name.
	ListToolsets(ctx context.Context) ([]StoredToolset, error)
	// GetToolset returns one toolset, or ErrToolsetNotFound.
	GetToolset(ctx context.Context, name string) (StoredToolset, error)
	// CreateToolset stores a new toolset at version 1, or fails with
	// ErrToolsetExists.
	CreateToolset(ctx context.Context, t *Toolset) (StoredToolset, error)
	// UpdateToolset replaces a toolset. If version is not zero it must
	// equal the stored version, else ErrToolsetConflict.
	// ErrToolsetNotFound if absent.
	UpdateToolset(ctx context.Context, t *Toolset, version int64) (StoredToolset, error)
	// DeleteToolset removes a toolset, with the same version rule.
	DeleteToolset(ctx context.Context, name string, version int64) error
}

// ChangeToolset: the toolset Change.Name was created, updated or deleted.
const ChangeToolset ChangeKind = "toolset"

// Errors of a ToolsetStore, matched with errors.Is. Their codes are those
// of the server errors.
var (
	ErrToolsetNotFound = NewError(CodeNotFound, "toolset not found")
	ErrToolsetExists   = NewError(CodeExists, "a toolset with that name already exists")
	ErrToolsetConflict = NewError(CodeConflict, "the toolset was changed by someone else; reload it and try again")
)
