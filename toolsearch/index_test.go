package toolsearch_test

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/switchboard-mcp/switchboard/toolsearch"
	"github.com/switchboard-mcp/switchboard/toolsearch/toolsearchtest"
)

var queries = []string{"create a new invoice", "list the open tickets", "delete a customer permanently",
	"export payments as csv", "requires the write scope", "assign the incident to a team", "zzz nothing"}

// same reports whether two searches found the same tools in the same
// order with the same scores (to rounding).
func same(a, b []toolsearch.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Tool.Server != b[i].Tool.Server || a[i].Tool.Name != b[i].Tool.Name || math.Abs(a[i].Score-b[i].Score) > 1e-9 {
			return false
		}
	}
	return true
}

func fresh(catalog map[string][]toolsearch.Tool) *toolsearch.Index {
	ix := toolsearch.New()
	for _, s := range slices.Sorted(maps.Keys(catalog)) {
		ix.Set(s, slices.Clone(catalog[s]))
	}
	return ix
}

// Re-indexing servers one at a time, in any order, with servers added,
// replaced and removed on the way, leaves the index as one built afresh
// from what is there: the statistics one server's change adjusts are
// those a rebuild would compute.
func TestIncrementalIndexEqualsARebuild(t *testing.T) {
	catalog := toolsearchtest.Catalog(20, 30)
	other := toolsearchtest.Catalog(21, 7) // different tools under the same names
	servers := slices.Sorted(maps.Keys(catalog))

	ix := toolsearch.New()
	for _, s := range servers {
		ix.Set(s, slices.Clone(other[s]))
	}
	ix.Set("gone", slices.Clone(other[servers[0]]))
	for i := len(servers) - 1; i >= 0; i-- {
		ix.Set(servers[i], slices.Clone(catalog[servers[i]]))
	}
	ix.Set("gone", nil)

	want := fresh(catalog)
	if ix.Len() != want.Len() {
		t.Fatalf("%d tools, want %d", ix.Len(), want.Len())
	}
	for _, q := range queries {
		got, exp := ix.Search(q, 10, nil), want.Search(q, 10, nil)
		if !same(got, exp) {
			t.Errorf("%q: incremental %v, rebuilt %v", q, names(got), names(exp))
		}
	}
}

// A search's first k hits are the first k of the same search with no
// bound: the bounded heap keeps the best, and ties order the same way.
func TestSearchLimitKeepsTheBest(t *testing.T) {
	ix := fresh(toolsearchtest.Catalog(30, 40))
	for _, q := range queries {
		all := ix.Search(q, 1<<20, nil)
		for i := 1; i < len(all); i++ {
			if all[i].Score > all[i-1].Score {
				t.Fatalf("%q: hit %d scores %v above hit %d's %v", q, i, all[i].Score, i-1, all[i-1].Score)
			}
		}
		for _, k := range []int{1, 3, 10, 50} {
			if got := ix.Search(q, k, nil); !same(got, all[:min(k, len(all))]) {
				t.Errorf("%q, limit %d: %v, want %v", q, k, names(got), names(all[:min(k, len(all))]))
			}
		}
	}
}

// A tool allow refuses is never found, nor does it take a place of the
// limit from one it allows.
func TestSearchAppliesAllowBeforeRanking(t *testing.T) {
	ix := fresh(toolsearchtest.Catalog(10, 20))
	all := ix.Search("create a new invoice", 1<<20, nil)
	if len(all) < 5 {
		t.Fatalf("only %d hits", len(all))
	}
	hidden := all[0].Tool.Server // the best hit's whole server
	allow := func(tool *toolsearch.Tool) bool { return tool.Server != hidden }
	got := ix.Search("create a new invoice", 5, allow)
	var want []toolsearch.Hit
	for _, h := range all {
		if h.Tool.Server != hidden && len(want) < 5 {
			want = append(want, h)
		}
	}
	if !same(got, want) {
		t.Errorf("with %s hidden: %v, want %v", hidden, names(got), names(want))
	}
}

// Names in every style are found by the words they join, and a word is
// found in any of its English forms.
func TestSearchFindsNamesAndForms(t *testing.T) {
	ix := toolsearch.New()
	ix.Set("fs", []toolsearch.Tool{
		{Name: "list_directory", Description: "Get a detailed listing of all files and directories in a specified path."},
		{Name: "readTextFile", Description: "Read the complete contents of a file as text."},
		{Name: "move-file", Description: "Move or rename files and directories."},
	})
	ix.Set("kv", []toolsearch.Tool{{Name: "put", Description: "Stores a value under a key."}})
	for q, want := range map[string]string{
		"lists directories":       "list_directory",
		"read text file":          "readTextFile",
		"renaming a file":         "move-file",
		"storing values":          "put",
		"the contents of a file":  "readTextFile",
		"fs":                      "list_directory", // the server's name: every fs tool, ties by name
		"LIST DIRECTORY CONTENTS": "list_directory",
	} {
		hits := ix.Search(q, 1, nil)
		if len(hits) != 1 || hits[0].Tool.Name != want {
			t.Errorf("%q found %v, want %s", q, names(hits), want)
		}
	}
	if hits := ix.Search("the of a", 5, nil); len(hits) != 0 {
		t.Errorf("a query of stop words found %v", names(hits))
	}
}

func names(hits []toolsearch.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Tool.Server+"/"+h.Tool.Name)
	}
	return out
}
