package upstream_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// fakeNPX writes a shell script named npx that runs script, and returns
// its path: the session knows a package manager by its command's name.
func fakeNPX(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "npx")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A package manager that downloads silently for a while is not a failure
// while it lives: the attempt waits for it, within the startup timeout.
func TestAPackageManagerStillInstallingIsNotAFailure(t *testing.T) {
	npx := fakeNPX(t, "sleep 2; exec "+testserver.Binary(t))
	cfg := &sb.ServerConfig{Name: "cold", Transport: sb.TransportStdio, Command: npx, ProtocolVersion: "2025-11-25",
		StartupTimeoutMS: 20_000}
	s, rec := newSession(t, cfg, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for _, ev := range rec.all() {
		if ev.Reason == sb.ReasonAttemptFailed {
			t.Errorf("a cold start counted as a failed attempt: %+v", ev)
		}
	}
}

// One that is still installing when the startup timeout passes fails in
// phase dep_install, saying what to raise; one that cannot install fails
// dep_install with its own words.
func TestPackageManagerFailuresArePhaseDepInstall(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		code         sb.Code
		says         string
	}{
		{"still downloading at the timeout", "sleep 30", sb.CodeTimeout, "startup_timeout_ms"},
		{"cannot install", `echo "npm error code E404" >&2; echo "npm error 404 Not Found - GET https://registry.npmjs.org/nope" >&2; exit 1`,
			sb.CodeDepInstallFailed, "404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sb.ServerConfig{Name: "cold", Transport: sb.TransportStdio, Command: fakeNPX(t, tc.script),
				StartupTimeoutMS: 1500, Retry: &sb.RetryConfig{MaxAttempts: 1, SlowRetryMS: 60_000}}
			s, _ := newSession(t, cfg, &upstream.Options{HealthInterval: -1})
			s.Start(context.Background())
			info := waitFor(t, s, "the failure", func(i sb.RuntimeInfo) bool { return i.Error != nil })
			if e := info.Error; e.Phase != sb.PhaseDepInstall || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("error %+v; want phase dep_install, code %s, saying %q", e, tc.code, tc.says)
			}
		})
	}
}
