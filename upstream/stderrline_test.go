package upstream_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// The failure of a server that crashes at startup quotes the stderr line
// that says what went wrong, read from real runtimes' crash output: node's
// uncaught error (which node follows with its stack and its version
// banner, "Node.js v20.20.2", the line quoted on the old code), Python's
// traceback and a Go panic (followed by the goroutine's frames). What is
// tested is the reading of stderr, so the servers run unsandboxed: a
// sandbox would change nothing of what they print.
func TestCrashSummaryQuotesTheErrorLine(t *testing.T) {
	panicker := buildPanicker(t)
	for _, c := range []struct {
		name, command string
		args          []string
		want          string
	}{
		{"node", "node", []string{"-e", `require("nope")`}, "Error: Cannot find module 'nope'"},
		{"python", "python3", []string{"-c", "import nope"}, "ModuleNotFoundError: No module named 'nope'"},
		{"go", panicker, nil, "panic: the server cannot start: no config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.command); err != nil {
				t.Skipf("%s is not installed: %v", c.command, err)
			}
			cfg := &sb.ServerConfig{Name: c.name, Transport: sb.TransportStdio, Command: c.command, Args: c.args,
				ProtocolVersion: "2025-11-25", Retry: &sb.RetryConfig{MaxAttempts: 1}}
			s, _ := newSession(t, cfg, nil)
			err := s.Start(context.Background())
			var uerr *upstream.Error
			if !errors.As(err, &uerr) {
				t.Fatalf("Start = %v, want the crash's error", err)
			}
			if !strings.Contains(uerr.Message, c.want) {
				t.Errorf("the failure reads %q; want it to quote %q\nstderr:\n%s", uerr.Message, c.want, strings.Join(s.Logs(), "\n"))
			}
		})
	}
}

// buildPanicker builds a Go program that panics as a server does on a bad
// start.
func buildPanicker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nfunc main() { panic(\"the server cannot start: no config\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module panicker\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "panicker")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
