package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
)

// applyFlags runs the server flags of check and server add over args and
// returns the config they make.
func applyFlags(t *testing.T, args ...string) (*sb.ServerConfig, error) {
	t.Helper()
	var cfg sb.ServerConfig
	var sf serverFlags
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	sf.register(cmd.Flags(), &cfg, "")
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg.Name = "x"
	return &cfg, sf.apply(cmd, &cfg)
}

func TestMountFlagsBecomeTheSandboxMounts(t *testing.T) {
	wd, _ := os.Getwd()
	cfg, err := applyFlags(t, "--command", "npx", "--arg", "server",
		"--mount", "/srv/data", "--mount", "/srv/docs:/docs", "--mount", "/srv/out:rw", "--mount", "/srv/db:/var/db:rw", "--mount", "rel")
	if err != nil {
		t.Fatal(err)
	}
	want := &sb.SandboxConfig{Mounts: []sb.Mount{
		{Host: "/srv/data"}, {Host: "/srv/docs", Path: "/docs"}, {Host: "/srv/out", Mode: "rw"},
		{Host: "/srv/db", Path: "/var/db", Mode: "rw"}, {Host: filepath.Join(wd, "rel")}}}
	if !reflect.DeepEqual(cfg.Sandbox, want) {
		t.Errorf("sandbox %+v, want %+v", cfg.Sandbox, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the config the flags make is invalid: %v", err)
	}

	if cfg, err := applyFlags(t, "--command", "npx"); err != nil || cfg.Sandbox != nil {
		t.Errorf("without sandbox flags: %+v, %v; want no sandbox field (the default profile)", cfg.Sandbox, err)
	}
	if cfg, err := applyFlags(t, "--command", "npx", "--no-sandbox"); err != nil || cfg.Sandbox == nil || *cfg.Sandbox.Enabled {
		t.Errorf("--no-sandbox: %+v, %v; want enabled false", cfg.Sandbox, err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--url", "https://x.example/mcp", "--mount", "/srv"}, "--command servers"},
		{[]string{"--command", "x", "--mount", "/srv", "--no-sandbox"}, "one or the other"},
		{[]string{"--command", "x", "--mount", "/a:/b:/c"}, "HOST:PATH:ro|rw"},
		{[]string{"--command", "x", "--mount", ":/b"}, "host path is empty"},
	} {
		if _, err := applyFlags(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.says)
		}
	}
}

func TestAllowFlagsBecomeTheSandboxNetworkAllowlist(t *testing.T) {
	cfg, err := applyFlags(t, "--command", "npx", "--allow", "api.github.com:443", "--allow", "10.1.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	want := &sb.SandboxConfig{Network: &sb.SandboxNetwork{Allow: []string{"api.github.com:443", "10.1.2.0/24"}}}
	if !reflect.DeepEqual(cfg.Sandbox, want) {
		t.Errorf("sandbox %+v, want %+v", cfg.Sandbox, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the config the flags make is invalid: %v", err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--url", "https://x.example/mcp", "--allow", "a.example"}, "--command servers"},
		{[]string{"--command", "x", "--allow", "a.example", "--no-sandbox"}, "one or the other"},
		{[]string{"--command", "x", "--allow", "a.example:99999"}, "--allow \"a.example:99999\": the port"},
	} {
		if _, err := applyFlags(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.says)
		}
	}
}
