package gateway

import (
	"strings"
	"testing"
)

func TestAggregateNames(t *testing.T) {
	long := strings.Repeat("t", 80)
	for _, tc := range []struct {
		server, tool string
		want         string // "" = check the properties only
	}{
		{"github", "create_issue", "github__create_issue"},
		{"fs", "read-file", "fs__read-file"},
		{"fs", "dir/list", ""},  // invalid character
		{"fs", "read.file", ""}, // invalid character
		{"s", long, ""},         // too long
		{"s", "ünïcode", ""},    // non-ASCII
		{strings.Repeat("a", 48), strings.Repeat("b", 14), strings.Repeat("a", 48) + "__" + strings.Repeat("b", 14)}, // exactly 64
	} {
		got := aggregateName(tc.server, tc.tool)
		if tc.want != "" && got != tc.want {
			t.Errorf("aggregateName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if !ValidName(got) {
			t.Errorf("aggregateName(%q, %q) = %q is not a valid LLM tool name", tc.server, tc.tool, got)
		}
		if again := aggregateName(tc.server, tc.tool); again != got {
			t.Errorf("not deterministic: %q then %q", got, again)
		}
		if !strings.HasPrefix(got, tc.server[:min(len(tc.server), 40)]) {
			t.Errorf("%q lost its server prefix", got)
		}
	}
	// Two originals that sanitise alike still get different names.
	if a, b := aggregateName("fs", "read.file"), aggregateName("fs", "read/file"); a == b {
		t.Errorf("collision: %q", a)
	}
	if a, b := aggregateName("s", long+"x"), aggregateName("s", long+"y"); a == b || len(a) != 64 {
		t.Errorf("long names %q %q", a, b)
	}
}

func TestClaimResolvesCollisions(t *testing.T) {
	m := &mirror{}
	names := map[string]origin{}
	a := m.claim(names, origin{"s1", "t"}, "x")
	b := m.claim(names, origin{"s2", "t"}, "x")
	c := m.claim(names, origin{"s1", "t"}, "x")
	if a != "x" || b != "x_2" || c != "x" {
		t.Fatalf("claims %q %q %q", a, b, c)
	}
}

func FuzzAggregateName(f *testing.F) {
	f.Add("github", "create_issue")
	f.Add("a", "b/c.d")
	f.Fuzz(func(t *testing.T, server, tool string) {
		got := aggregateName(server, tool)
		if !ValidName(got) && server+tool != "" {
			// Only an empty input may produce an empty name.
			t.Fatalf("aggregateName(%q, %q) = %q", server, tool, got)
		}
		if aggregateName(server, tool) != got {
			t.Fatal("not deterministic")
		}
	})
}
