package buildinfo

import "testing"

// TestVersionNamesTheCommit: the commit a binary was built from is in
// its version line, cut to 12 characters, with its time and whether the
// tree was modified.
func TestVersionNamesTheCommit(t *testing.T) {
	bi := Info{Version: "v1.2.0", Commit: "0123456789abcdef0123", CommitTime: "2026-11-30T12:00:00Z", Modified: true, Go: "go1.26.8"}
	if got, want := bi.String(), "switchboard v1.2.0 (commit 0123456789ab, 2026-11-30T12:00:00Z, modified; go1.26.8)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := (Info{Version: "(devel)", Go: "go1.26.8"}).String(), "switchboard (devel) (go1.26.8)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
