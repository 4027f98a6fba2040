package switchboard

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestMatchPattern(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"read_file", "read_file", true},
		{"read_file", "read_files", false},
		{"read_*", "read_file", true},
		{"read_*", "read_", true},
		{"read_*", "rea", false},
		{"*", "", true},
		{"*", "anything", true},
		{"*_file", "read_file", true},
		{"*_file", "read_file_x", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"**", "x", true},
		{"", "", true},
		{"", "x", false},
		{"file:///repo/*", "file:///repo/a/b.txt", true},
		{"file:///repo/*", "file:///etc/passwd", false},
	} {
		if got := MatchPattern(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// FuzzMatchPattern checks the matcher against a regular expression built
// from the pattern (each '*' a ".*", everything else literal), which is
// the documented meaning, and that a pattern without '*' matches exactly
// itself.
func FuzzMatchPattern(f *testing.F) {
	for _, s := range [][2]string{{"read_*", "read_file"}, {"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"", ""},
		{"a*", "b"}, {"*x*", "\xff\x00x"}, {"file:///*/{id}", "file:///a/{id}"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := MatchPattern(pattern, name)
		var re strings.Builder
		re.WriteString(`(?s)\A`)
		for i, part := range strings.Split(pattern, "*") {
			if i > 0 {
				re.WriteString(".*")
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString(`\z`)
		// Bytes, not runes: the matcher is bytewise, and so is a regexp
		// over a string that is not valid UTF-8 only through Latin-1.
		want := bytewise(re.String(), name)
		if got != want {
			t.Fatalf("MatchPattern(%q, %q) = %v; the regexp %s says %v", pattern, name, got, re.String(), want)
		}
		if !IsPattern(pattern) && got != (pattern == name) {
			t.Fatalf("MatchPattern(%q, %q) = %v for an exact name", pattern, name, got)
		}
	})
}

// bytewise matches name against re byte by byte: both are mapped to runes
// one per byte (Latin-1), so that invalid UTF-8 compares as it is.
func bytewise(re, name string) bool {
	latin := func(s string) string {
		r := make([]rune, len(s))
		for i := range len(s) {
			r[i] = rune(s[i])
		}
		return string(r)
	}
	// re is built from QuoteMeta of the pattern's bytes; map it the same
	// way so that its literals are the same runes.
	return regexp.MustCompile(latin(re)).MatchString(latin(name))
}

func TestToolsetSelect(t *testing.T) {
	ts := &Toolset{Name: "coder",
		Tools: []Selector{
			{Server: "github", Tool: "*"},
			{Server: "github", Tool: "search_code", As: "search"},
			{Server: "fs", Tool: "read_*"},
		},
		Prompts:   []Selector{{Server: "*", Tool: "review"}},
		Resources: []ResourceSelector{{Server: "fs", URI: "file:///repo/*"}},
	}
	if s, ok := ts.Select(KindTool, "github", "search_code"); !ok || s.As != "search" {
		t.Errorf("the exact selector must win over the earlier pattern: %+v %v", s, ok)
	}
	for _, tt := range []struct {
		kind         Kind
		server, name string
		want         bool
	}{
		{KindTool, "github", "create_issue", true},
		{KindTool, "fs", "read_file", true},
		{KindTool, "fs", "write_file", false},
		{KindTool, "github2", "x", false},
		{KindTool, "fs", "review", false},
		{KindPrompt, "fs", "review", true},
		{KindPrompt, "github", "read_file", false},
		{KindResource, "fs", "file:///repo/main.go", true},
		{KindResource, "fs", "file:///etc/passwd", false},
		{KindResource, "github", "file:///repo/main.go", false},
		{KindResource, "fs", "file:///repo/../etc/passwd", false},
		{KindResource, "fs", "file:///repo/%2e%2e/etc/passwd", false},
		{KindResource, "fs", "file:///repo/%2E./etc/passwd", false},
		{KindResource, "fs", "file:///repo/./main.go", false},
		{KindResource, "fs", "file:///repo/a%2F..%2F..%2Fetc", false},
		{KindResource, "fs", "file:///repo/a%5c..%5cb", false},
		{KindResource, "fs", "file:///repo/..md", true},
		{KindResource, "fs", "file:///repo/main.go?rev=../x", true},
		{Kind("other"), "fs", "read_file", false},
	} {
		if got := ts.Allows(tt.kind, tt.server, tt.name); got != tt.want {
			t.Errorf("Allows(%s, %s, %s) = %v, want %v", tt.kind, tt.server, tt.name, got, tt.want)
		}
	}
	var none *Toolset
	if none.Allows(KindTool, "fs", "read_file") {
		t.Error("a nil toolset allows something")
	}
}

func TestToolsetValidate(t *testing.T) {
	ok := &Toolset{Name: "coder", Tools: []Selector{{Server: "fs", Tool: "read_file", As: "read"}, {Server: "gh", Tool: "*"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid toolset: %v", err)
	}
	for _, mode := range []string{ModeCatalog, ModeSearch} {
		if err := (&Toolset{Name: "coder", Mode: mode}).Validate(); err != nil {
			t.Errorf("mode %q: %v", mode, err)
		}
	}
	for _, tt := range []struct {
		name  string
		ts    Toolset
		field string
	}{
		{"no name", Toolset{}, "name"},
		{"bad name", Toolset{Name: "Coder"}, "name"},
		{"empty server", Toolset{Name: "x", Tools: []Selector{{Tool: "a"}}}, "tools[0].server"},
		{"empty tool", Toolset{Name: "x", Tools: []Selector{{Server: "fs"}}}, "tools[0].tool"},
		{"empty prompt", Toolset{Name: "x", Prompts: []Selector{{Server: "fs"}}}, "prompts[0].tool"},
		{"rename a pattern", Toolset{Name: "x", Tools: []Selector{{Server: "fs", Tool: "read_*", As: "read"}}}, "tools[0].as"},
		{"two items, one name", Toolset{Name: "x", Tools: []Selector{{Server: "fs", Tool: "a", As: "same"}, {Server: "gh", Tool: "b", As: "same"}}}, "tools[1].as"},
		{"an aggregated name", Toolset{Name: "x", Tools: []Selector{{Server: "fs", Tool: "a", As: "gh__b"}}}, "tools[0].as"},
		{"a name LLMs refuse", Toolset{Name: "x", Tools: []Selector{{Server: "fs", Tool: "a", As: "a b"}}}, "tools[0].as"},
		{"annotations on a prompt", Toolset{Name: "x", Prompts: []Selector{{Server: "fs", Tool: "a", Annotations: &ToolAnnotations{}}}}, "prompts[0].annotations"},
		{"empty uri", Toolset{Name: "x", Resources: []ResourceSelector{{Server: "fs"}}}, "resources[0].uri"},
		{"an unknown mode", Toolset{Name: "x", Mode: "find"}, "mode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ts.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v, want a *ValidationError", err)
			}
			for _, f := range ve.Fields {
				if f.Field == tt.field {
					return
				}
			}
			t.Errorf("error %v does not name %s", err, tt.field)
		})
	}
}

func TestPrincipalAllows(t *testing.T) {
	api, agg, coder, support := Endpoint{}, Endpoint{MCP: true}, Endpoint{Toolset: "coder"}, Endpoint{Toolset: "support"}
	for _, tt := range []struct {
		scopes []Scope
		e      Endpoint
		want   bool
	}{
		{[]Scope{ScopeAdmin}, api, true},
		{[]Scope{ScopeAdmin}, coder, true},
		{[]Scope{ScopeMCP}, agg, true},
		{[]Scope{ScopeMCP}, api, false},
		{[]Scope{ScopeMCP}, coder, false},
		{[]Scope{ToolsetScope("coder")}, coder, true},
		{[]Scope{ToolsetScope("coder")}, support, false},
		{[]Scope{ToolsetScope("coder")}, agg, false},
		{[]Scope{ToolsetScope("coder")}, api, false},
		{nil, coder, false},
	} {
		if got := (Principal{Name: "t", Scopes: tt.scopes}).Allows(tt.e); got != tt.want {
			t.Errorf("%v on %+v: %v, want %v", tt.scopes, tt.e, got, tt.want)
		}
	}
}

func TestValidateToken(t *testing.T) {
	if err := ValidateToken("ci", []Scope{ScopeMCP, ToolsetScope("coder")}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		scopes []Scope
	}{
		{"", []Scope{ScopeMCP}},
		{"admin", []Scope{ScopeMCP}},
		{"ci", nil},
		{"ci", []Scope{"root"}},
		{"ci", []Scope{"toolset:"}},
		{"ci", []Scope{"toolset:Bad Name"}},
	} {
		if err := ValidateToken(tt.name, tt.scopes); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ValidateToken(%q, %v) = %v, want a validation error", tt.name, tt.scopes, err)
		}
	}
	secret, hash := NewTokenSecret()
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) != len(TokenPrefix)+43 || HashToken(secret) != hash {
		t.Errorf("secret %q", secret)
	}
	if other, _ := NewTokenSecret(); other == secret {
		t.Error("two secrets are equal")
	}
}

// BenchmarkToolsetAllows is the cost of the decision for one item of a
// toolset of 20 selectors, where the last one picks it.
func BenchmarkToolsetAllows(b *testing.B) {
	ts := &Toolset{Name: "big"}
	for i := range 19 {
		ts.Tools = append(ts.Tools, Selector{Server: "server" + string(rune('a'+i)), Tool: "tool_*"})
	}
	ts.Tools = append(ts.Tools, Selector{Server: "github", Tool: "search_*"})
	b.ReportAllocs()
	for b.Loop() {
		if !ts.Allows(KindTool, "github", "search_code") {
			b.Fatal("refused")
		}
	}
}

// FuzzValidateToolset decodes arbitrary bytes as a Toolset, as the API and
// the stores do, and checks what the gateway relies on: Validate never
// panics; an error is a *ValidationError naming a field; a toolset that
// validates has unique exposed names, none with "__", renames only on
// exact selectors, and survives a JSON round trip unchanged.
func FuzzValidateToolset(f *testing.F) {
	for _, s := range []string{
		`{"name":"coder","tools":[{"server":"gh","tool":"search_*"},{"server":"fs","tool":"read_file","as":"read","description":"d","annotations":{"readOnlyHint":true}}],"prompts":[{"server":"*","tool":"review"}],"resources":[{"server":"fs","uri":"file:///*"}]}`,
		`{"name":"x","tools":[{"server":"a","tool":"b","as":"same"},{"server":"c","tool":"d","as":"same"}]}`,
		`{"name":"x","tools":[{"server":"a*","tool":"b","as":"r"}]}`,
		`{"name":"x","prompts":[{"server":"a","tool":"b","annotations":{}}]}`,
		`{"name":"","tools":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ts Toolset
		if json.Unmarshal(data, &ts) != nil {
			return
		}
		err := ts.Validate()
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) == 0 || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate: %v is not a *ValidationError naming a field", err)
			}
			return
		}
		for _, sels := range [][]Selector{ts.Tools, ts.Prompts} {
			seen := map[string]bool{}
			for _, s := range sels {
				if s.As == "" {
					continue
				}
				if seen[s.As] || strings.Contains(s.As, "__") || IsPattern(s.Server) || IsPattern(s.Tool) {
					t.Fatalf("a valid toolset exposes %q badly: %+v", s.As, sels)
				}
				seen[s.As] = true
			}
		}
		again, err := json.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		var back Toolset
		if err := json.Unmarshal(again, &back); err != nil || !reflect.DeepEqual(normal(back), normal(ts)) {
			t.Fatalf("round trip: %+v, want %+v (%v)", back, ts, err)
		}
	})
}

// normal makes empty and nil lists the same, as JSON does (omitempty).
func normal(t Toolset) Toolset {
	if len(t.Tools) == 0 {
		t.Tools = nil
	}
	if len(t.Prompts) == 0 {
		t.Prompts = nil
	}
	if len(t.Resources) == 0 {
		t.Resources = nil
	}
	return t
}
