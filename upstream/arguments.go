package upstream

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// This file checks a call's arguments before anything is sent: they must
// be a JSON object that matches the tool's input schema, and the tool must
// be one the server lists (else the closest names are suggested).

// normalizeArgs turns the caller's arguments into JSON and its decoded
// object: nil becomes {}, a json.RawMessage or []byte is checked, anything
// else is marshalled. The object is decoded once, here, for the schema
// check, as encoding/json would decode it (rawjson.Decode).
func normalizeArgs(args any) (json.RawMessage, map[string]any, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), map[string]any{}, nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, nil, fmt.Errorf("arguments cannot be encoded as JSON: %w", err)
		}
		raw = b
	}
	if len(raw) == 0 {
		return json.RawMessage("{}"), map[string]any{}, nil
	}
	v, ok := rawjson.Decode(raw)
	if !ok { // encoding/json says what is wrong with it
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, nil, fmt.Errorf("arguments are not valid JSON: %w", err)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("arguments must be a JSON object, not %s", jsonKind(v))
	}
	return raw, obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// schemaCache holds the resolved input schemas of one catalog, resolved on
// first use. A catalog is replaced whole on refresh, and its cache with it.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*inputSchema // nil value: the schema could not be resolved
}

// inputSchema is a tool's input schema as the validator resolved it, and
// compiled for the quick check if it can be (quickschema.go).
type inputSchema struct {
	rs    *jsonschema.Resolved
	quick *quickSchema
}

// validate checks that the catalog has the tool and that args match its
// input schema. A schema the validator cannot handle does not block calls:
// the server validates too, and refusing a valid call would be worse.
func (c catalog) validate(server, tool string, args map[string]any) error {
	var t *mcp.Tool
	for _, ct := range c.tools {
		if ct.Name == tool {
			t = ct
			break
		}
	}
	if t == nil {
		return &UnknownToolError{Server: server, Tool: tool, Suggestions: Suggest(tool, toolNames(c.tools))}
	}
	s := c.schemas.resolve(t)
	if s == nil || s.quick != nil && s.quick.accepts(args) {
		return nil
	}
	if err := s.rs.Validate(args); err != nil {
		field, msg := describeSchemaError(err)
		return &ArgumentError{Server: server, Tool: tool, Field: field, Message: msg}
	}
	return nil
}

func (sc *schemaCache) resolve(t *mcp.Tool) *inputSchema {
	if sc == nil || t.InputSchema == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s, ok := sc.m[t.Name]
	if !ok {
		s = compileInputSchema(t.InputSchema)
		if sc.m == nil {
			sc.m = make(map[string]*inputSchema)
		}
		sc.m[t.Name] = s
	}
	return s
}

// compileInputSchema resolves a tool's input schema for the validator, and
// compiles it for the quick check if it can be; nil if the validator
// cannot check it.
func compileInputSchema(schema any) *inputSchema {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var js jsonschema.Schema
	if json.Unmarshal(b, &js) != nil {
		return nil
	}
	// The validator resolves a schema of a draft it does not know, then
	// refuses every instance: such a schema is not checked here (the
	// server checks its own).
	if js.Schema != "" && !drafts[js.Schema] {
		return nil
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		return nil
	}
	s := &inputSchema{rs: rs}
	var decoded any
	if json.Unmarshal(b, &decoded) == nil {
		s.quick, _ = compileQuick(decoded)
	}
	return s
}

var (
	schemaPropRE    = regexp.MustCompile(`/properties/([^/:\s]+)`)
	schemaMissingRE = regexp.MustCompile(`missing properties: \[?"?([^"\]\s,]+)`)
	schemaPrefixRE  = regexp.MustCompile(`^validating [^:]*: `)
)

// describeSchemaError names the argument a jsonschema error is about and
// strips the validator's schema paths from the message.
func describeSchemaError(err error) (field, msg string) {
	msg = err.Error()
	if m := schemaMissingRE.FindStringSubmatch(msg); m != nil {
		return m[1], "is required"
	}
	if m := schemaPropRE.FindStringSubmatch(msg); m != nil {
		field = m[1]
	}
	for schemaPrefixRE.MatchString(msg) {
		msg = schemaPrefixRE.ReplaceAllString(msg, "")
	}
	return field, msg
}

func toolNames(tools []*mcp.Tool) []string {
	n := make([]string, len(tools))
	for i, t := range tools {
		n[i] = t.Name
	}
	return n
}

// Suggest returns up to three of names closest to name (edit distance,
// case-insensitive, with prefix and substring matches first), for "did you
// mean" messages.
func Suggest(name string, names []string) []string {
	type cand struct {
		name string
		dist int
	}
	lname := strings.ToLower(name)
	limit := max(2, len(name)/3)
	var cs []cand
	for _, n := range names {
		ln := strings.ToLower(n)
		d := levenshtein(lname, ln)
		if lname != "" && (strings.Contains(ln, lname) || strings.Contains(lname, ln)) {
			d = min(d, 1)
		}
		if d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].dist != cs[j].dist {
			return cs[i].dist < cs[j].dist
		}
		return cs[i].name < cs[j].name
	})
	out := make([]string, 0, 3)
	for _, c := range cs {
		if len(out) == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// levenshtein is the edit distance of a and b, an adjacent transposition
// counting as one edit (optimal string alignment): "lsit" is one edit from
// "list", not two, as it is from "edit".
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
