package client

// This file makes a new server's sandbox and a toolset from what a
// person gives "server add", "check" and "toolset add" (the parsers of
// flags.go for each value). Its errors name the flags.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
)

// Sandbox sets the sandbox of cfg, a new server, from the --mount
// (ParseMount), --allow and --no-sandbox values. Without any of them the
// config has no sandbox field: the default profile.
func Sandbox(cfg *sb.ServerConfig, mounts, allow []string, off bool) error {
	switch {
	case len(mounts) == 0 && len(allow) == 0 && !off:
		return nil
	case cfg.Transport != sb.TransportStdio:
		return fmt.Errorf("--mount, --allow and --no-sandbox are for --command servers; a remote server runs elsewhere")
	case off && len(mounts) > 0:
		return fmt.Errorf("--mount makes a host path visible in the sandbox, which --no-sandbox turns off; give one or the other")
	case off && len(allow) > 0:
		return fmt.Errorf("--allow limits what the sandbox reaches, which --no-sandbox turns off; give one or the other")
	case off:
		cfg.Sandbox = &sb.SandboxConfig{Enabled: new(false)}
		return nil
	}
	ms, err := parseAll("--mount", mounts, ParseMount)
	if err != nil {
		return err
	}
	cfg.Sandbox = &sb.SandboxConfig{Mounts: ms}
	if err := CheckAllow(allow); err != nil {
		return err
	}
	if len(allow) > 0 {
		cfg.Sandbox.Network = &sb.SandboxNetwork{Allow: allow}
	}
	return nil
}

// CheckAllow refuses an --allow value the daemon would refuse, here,
// naming the flag.
func CheckAllow(allow []string) error {
	for _, a := range allow {
		if _, err := sb.ParseNetworkAllow(a); err != nil {
			return fmt.Errorf("--allow %v", err)
		}
	}
	return nil
}

// ParseMounts parses --mount values (ParseMount).
func ParseMounts(values []string) ([]sb.Mount, error) {
	return parseAll("--mount", values, ParseMount)
}

// ToolsetSpec is a toolset as "toolset add" and "update" take it: a JSON
// file (-f, "-" for stdin), or the selectors of --tool, --prompt and
// --resource (ParseSelector, ParseResourceSelector) with a description
// and mode.
type ToolsetSpec struct {
	File, Description, Mode   string
	Tools, Prompts, Resources []string
}

// Toolset returns the toolset s describes, named name; in is stdin.
func (s *ToolsetSpec) Toolset(in io.Reader, name string) (*sb.Toolset, error) {
	ts := &sb.Toolset{}
	if s.File != "" {
		if len(s.Tools)+len(s.Prompts)+len(s.Resources) > 0 || s.Description != "" || s.Mode != "" {
			return nil, fmt.Errorf("-f and --tool, --prompt, --resource, --description or --mode exclude each other: put everything in the file")
		}
		var data []byte
		var err error
		if s.File == "-" {
			data, err = io.ReadAll(in)
		} else {
			data, err = os.ReadFile(s.File)
		}
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(ts); err != nil {
			return nil, fmt.Errorf("reading the toolset from %s: %w", s.File, err)
		}
		if ts.Name != "" && ts.Name != name {
			return nil, fmt.Errorf("the file names the toolset %q, not %q", ts.Name, name)
		}
		ts.Name = name
		return ts, nil
	}
	ts.Name, ts.Description, ts.Mode = name, s.Description, s.Mode
	var err error
	if ts.Tools, err = parseAll("--tool", s.Tools, func(v string) (sb.Selector, error) { return ParseSelector("TOOL", v) }); err != nil {
		return nil, err
	}
	if ts.Prompts, err = parseAll("--prompt", s.Prompts, func(v string) (sb.Selector, error) { return ParseSelector("PROMPT", v) }); err != nil {
		return nil, err
	}
	ts.Resources, err = parseAll("--resource", s.Resources, ParseResourceSelector)
	return ts, err
}

// parseAll parses the values of a repeated flag, naming it in an error.
func parseAll[T any](flag string, values []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s %w", flag, err)
		}
		out = append(out, x)
	}
	return out, nil
}
