package daemontest

import (
	"path/filepath"

	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

// mainPackage is switchboard's main package, relative to the module root.
const mainPackage = "./cmd/switchboard"

// Build builds the switchboard binary as dir/switchboard and returns its
// absolute path. The caller owns dir.
func Build(dir string) (string, error) {
	return gobuild.Build(mainPackage, filepath.Join(dir, "switchboard"))
}
