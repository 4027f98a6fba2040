package switchboard

import (
	"go/build"
	"maps"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path; its packages live under the
// directory of this test (the module's root).
const module = "github.com/switchboard-mcp/switchboard"

// deps returns the packages that the package in dir (relative to the
// module's root) imports from its non-test files, directly and through
// the module's own packages, as built for this platform.
func deps(t *testing.T, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if imp == module {
				walk(".")
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				walk(rest)
			}
		}
	}
	walk(dir)
	return slices.Sorted(maps.Keys(seen))
}

// TestPackagesByConcern holds the package layout of issue 28's "packages
// by concern": the domain package keeps types, errors and pure functions
// and touches no file (the OAuth key file is internal/oauthkey's); the
// registry returns domain types, never the HTTP API's wire types (httpapi
// converts); metrics reads the gateway through an interface of its own.
func TestPackagesByConcern(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		switch imp {
		case "os", "os/exec", "io/fs", "io/ioutil", "path/filepath", "syscall", module + "/internal/fileowner":
			t.Errorf("the domain package imports %s: it does no file I/O", imp)
		}
	}
	for _, edge := range []struct{ from, to string }{
		{"registry", "api"},
		{"metrics", "gateway"},
	} {
		if slices.Contains(deps(t, edge.from), module+"/"+edge.to) {
			t.Errorf("%s imports %s", edge.from, edge.to)
		}
	}
}
