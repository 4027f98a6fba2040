// Package buildinfo says which build of switchboard is running: the
// module version, the commit and the Go version, read from the binary.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what "switchboard version" reports: the module version
// ("v1.2.0" when installed with go install ...@v1.2.0, "(devel)" when built
// from a clone), the commit it was built from and when that was made (the
// VCS stamp of "go build" in a clone), whether the work tree had changes,
// and the Go version.
type Info struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
}

// Read reads the binary's build information. version, unless "dev", wins
// over the module's: the one set with -ldflags "-X main.version=...".
func Read(version string) Info {
	bi := Info{Version: version, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return bi
	}
	if bi.Version == "dev" && info.Main.Version != "" {
		bi.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Commit = s.Value
		case "vcs.time":
			bi.CommitTime = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	return bi
}

// String reads "switchboard v1.2.0 (commit 0123abcd4567, 2026-11-30T12:00:00Z, modified; go1.26.8)".
func (bi Info) String() string {
	var parts []string
	if bi.Commit != "" {
		c := "commit " + bi.Commit[:min(12, len(bi.Commit))]
		if bi.CommitTime != "" {
			c += ", " + bi.CommitTime
		}
		if bi.Modified {
			c += ", modified"
		}
		parts = append(parts, c)
	}
	parts = append(parts, bi.Go)
	return fmt.Sprintf("switchboard %s (%s)", bi.Version, strings.Join(parts, "; "))
}
