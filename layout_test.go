package switchboard

import (
	"go/build"
	"testing"
)

// module is this module's import path; its packages live under the
// directory of this test (the module's root).
const module = "github.com/switchboard-mcp/switchboard"

// TestPackagesByConcern holds the package layout of issue 28's "packages
// by concern": the domain package keeps types, errors and pure functions
// and touches no file (the OAuth key file is internal/oauthkey's).
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
}
