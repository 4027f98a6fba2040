package client

import (
	"reflect"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

func TestToolsetSpecReadsFlagsOrAFile(t *testing.T) {
	s := ToolsetSpec{Mode: sb.ModeSearch, Tools: []string{"github/search_*", "fs/read_file=read"}, Resources: []string{"fs/file:///repo/*"}}
	ts, err := s.Toolset(nil, "coder")
	want := &sb.Toolset{Name: "coder", Mode: sb.ModeSearch,
		Tools:     []sb.Selector{{Server: "github", Tool: "search_*"}, {Server: "fs", Tool: "read_file", As: "read"}},
		Resources: []sb.ResourceSelector{{Server: "fs", URI: "file:///repo/*"}}}
	if err != nil || !reflect.DeepEqual(ts, want) {
		t.Errorf("from flags: %+v, %v\nwant %+v", ts, err, want)
	}
	file := ToolsetSpec{File: "-"}
	ts, err = file.Toolset(strings.NewReader(`{"tools": [{"server": "fs", "tool": "*"}]}`), "fs")
	if err != nil || ts.Name != "fs" || len(ts.Tools) != 1 {
		t.Errorf("from stdin: %+v, %v", ts, err)
	}
	for _, tc := range []struct {
		spec ToolsetSpec
		in   string
		says string
	}{
		{ToolsetSpec{File: "-", Tools: []string{"a/b"}}, "", "exclude each other"},
		{ToolsetSpec{File: "-"}, `{"name": "other"}`, `names the toolset "other", not "fs"`},
		{ToolsetSpec{File: "-"}, `{"tools": [], "extra": 1}`, `unknown field "extra"`},
		{ToolsetSpec{Prompts: []string{"review"}}, "", `--prompt "review": want SERVER/PROMPT`},
	} {
		if _, err := tc.spec.Toolset(strings.NewReader(tc.in), "fs"); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v; want an error saying %s", tc.spec, err, tc.says)
		}
	}
}

func TestSandboxOfANewServer(t *testing.T) {
	cfg := &sb.ServerConfig{Transport: sb.TransportStdio, Command: "/bin/srv"}
	if err := Sandbox(cfg, nil, nil, false); err != nil || cfg.Sandbox != nil {
		t.Errorf("no sandbox flags: %+v, %v; want no sandbox field", cfg.Sandbox, err)
	}
	if err := Sandbox(cfg, []string{"/srv:rw"}, []string{"api.github.com:443"}, false); err != nil ||
		!reflect.DeepEqual(cfg.Sandbox, &sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv", Mode: "rw"}}, Network: &sb.SandboxNetwork{Allow: []string{"api.github.com:443"}}}) {
		t.Errorf("--mount and --allow: %+v, %v", cfg.Sandbox, err)
	}
	if err := Sandbox(cfg, nil, []string{"api.github.com:99999"}, false); err == nil || !strings.HasPrefix(err.Error(), "--allow ") {
		t.Errorf("a bad --allow: %v; want it refused naming the flag", err)
	}
	if err := Sandbox(cfg, nil, []string{"a.example"}, true); err == nil {
		t.Error("--allow with --no-sandbox was accepted")
	}
}
