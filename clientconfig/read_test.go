package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

func disabled() *bool { f := false; return &f }

// want is the expected outcome of importing one file.
type want struct {
	format  string
	servers []*sb.ServerConfig
	skipped []Skipped
	renamed map[string]string
}

// check compares a Result field by field, printing configs as JSON so a
// failure shows what differs, and asserts that no reason leaks a fixture
// secret (every fake secret in testdata contains "secret").
func check(t *testing.T, got *Result, w want) {
	t.Helper()
	if got.Format != w.format {
		t.Errorf("Format = %q, want %q", got.Format, w.format)
	}
	if !reflect.DeepEqual(got.Servers, w.servers) {
		g, _ := json.MarshalIndent(got.Servers, "", "  ")
		e, _ := json.MarshalIndent(w.servers, "", "  ")
		t.Errorf("Servers:\n got %s\nwant %s", g, e)
	}
	if !reflect.DeepEqual(got.Skipped, w.skipped) {
		t.Errorf("Skipped:\n got %q\nwant %q", got.Skipped, w.skipped)
	}
	if !reflect.DeepEqual(got.Renamed, w.renamed) {
		t.Errorf("Renamed = %v, want %v", got.Renamed, w.renamed)
	}
	for _, s := range got.Skipped {
		if strings.Contains(s.Reason, "secret") {
			t.Errorf("reason for %q leaks a secret: %s", s.Name, s.Reason)
		}
	}
	for _, c := range got.Servers {
		if err := c.Validate(); err != nil {
			t.Errorf("imported config %q is invalid: %v", c.Name, err)
		}
	}
}

func TestParseFileFixtures(t *testing.T) {
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		env  map[string]string // set for the test; "" means unset
		want want
	}{
		{
			file: "claude_desktop_config.json",
			want: want{
				format: FormatClaudeDesktop,
				servers: []*sb.ServerConfig{
					{
						Name: "github", Transport: sb.TransportStdio, Command: "docker",
						Args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
						Env:  map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "secret-fake-github-token"},
					},
					{
						Name: "sqlite-2", Transport: sb.TransportStdio, Command: "uvx",
						Args: []string{"mcp-server-sqlite", "--db-path", "/Users/me/other.db"},
					},
					{
						Name: "brave-search", Enabled: disabled(), Transport: sb.TransportStdio, Command: "npx",
						Args: []string{"-y", "@modelcontextprotocol/server-brave-search"},
						Env:  map[string]string{"BRAVE_API_KEY": "secret-brave-key"},
					},
					{
						Name: "context7", Transport: sb.TransportStreamableHTTP, URL: "https://mcp.context7.com/mcp",
						Headers: map[string]string{"CONTEXT7_API_KEY": "secret-ctx7"},
					},
					{Name: "deepwiki", Transport: sb.TransportStreamableHTTP, URL: "https://mcp.deepwiki.com/mcp"},
					{
						Name: "filesystem", Transport: sb.TransportStdio, Command: "npx",
						Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"},
					},
					{Name: "linear", Transport: sb.TransportSSE, URL: "https://mcp.linear.app/sse"},
					{Name: "notes", Transport: sb.TransportRemote, URL: "https://notes.example.com/mcp"},
					{
						Name: "sqlite", Transport: sb.TransportStdio, Command: "uvx",
						Args: []string{"mcp-server-sqlite", "--db-path", "/Users/me/test.db"},
					},
				},
				skipped: []Skipped{
					{"!!!", "the name has no ASCII letter or digit to build a Switchboard name from; rename it"},
					{"args-string", `"args" must be an array of strings`},
					{"bad-env-key", `invalid server config: env: key "API-KEY" is not a valid environment variable name`},
					{"both", `the entry has both "command" and "url"; keep the one for how the server should be reached`},
					{"empty", `the entry has neither "command" nor "url", so there is nothing to start or connect to`},
					{"ftp", "invalid server config: url: must be an absolute http:// or https:// URL"},
					{"not-an-object", `the entry is not a JSON object with "command" or "url"`},
					{"websocket", `"type" "ws" is not supported; use "stdio", "http", "streamable-http" or "sse"`},
				},
				renamed: map[string]string{"github": "GitHub", "sqlite-2": "SQLite", "brave-search": "brave_search"},
			},
		},
		{
			file: "cursor_mcp.json",
			env:  map[string]string{"IMPORTER_TEST_TOKEN": "tok-secret-123", "IMPORTER_TEST_UNSET": "", "HOME": "/home/tester"},
			want: want{
				format: FormatCursor, // "envFile" is a Cursor-only hint
				servers: []*sb.ServerConfig{
					{Name: "docs-server", Transport: sb.TransportRemote, URL: "https://docs.example.com/mcp"},
					{
						Name: "home-tool", Transport: sb.TransportStdio, Command: "/home/tester/bin/tool",
						Args: []string{"--data", "/home/tester/data"},
					},
					{
						Name: "postgres", Transport: sb.TransportStdio, Command: "npx",
						Args: []string{"-y", "@modelcontextprotocol/server-postgres"},
						Env: map[string]string{
							"PGHOST": "db.internal", "PGUSER": "app_user", "PGPASSWORD": "secret-pg-password",
							"PGDATABASE": "app", // "env" overrides the envFile
						},
					},
					{
						// ${NAME} without a prefix is not editor syntax: kept for the shell.
						Name: "shell", Transport: sb.TransportStdio, Command: "sh",
						Args: []string{"-c", "exec tool --token ${TOOL_TOKEN}"},
					},
					{
						Name: "userjot", Transport: sb.TransportRemote, URL: "https://api.userjot.com/v1/mcp",
						Headers: map[string]string{"Authorization": "Bearer tok-secret-123"},
					},
				},
				skipped: []Skipped{
					{"bad-env-file", "envFile " + filepath.Join(testdata, "bad.env") + " line 3 is not KEY=VALUE; fix or remove that line"},
					{"missing-token", "header Authorization uses ${env:IMPORTER_TEST_UNSET}, but IMPORTER_TEST_UNSET is not set in the environment of the import; set it and import again"},
					{"no-env-file", "envFile " + filepath.Join(testdata, "does-not-exist.env") + ` does not exist; create it or remove "envFile"`},
				},
				renamed: map[string]string{"docs-server": "Docs.Server"},
			},
		},
		{
			file: "vscode_mcp.json",
			env:  map[string]string{"IMPORTER_TEST_MEMORY": "/tmp/memory.json"},
			want: want{
				format: FormatVSCode,
				servers: []*sb.ServerConfig{
					// VS Code's "http" falls back to SSE, so it maps to remote.
					{Name: "github", Transport: sb.TransportRemote, URL: "https://api.githubcopilot.com/mcp/"},
					{
						Name: "legacy-sse", Transport: sb.TransportSSE, URL: "http://localhost:3001/sse",
						Headers: map[string]string{"X-Api-Key": "secret-sse-key"},
					},
					{
						Name: "local-env", Transport: sb.TransportStdio, Command: "python", Args: []string{"server.py"},
						Env: map[string]string{"API_URL": "https://api.example.com", "API_TOKEN": "secret-vscode-token"},
						Cwd: filepath.Join(testdata, "tools"),
					},
					{
						Name: "memory", Transport: sb.TransportStdio, Command: "npx",
						Args: []string{
							"-y", "@modelcontextprotocol/server-memory",
							"--endpoint=http://localhost:8080//mcp", "--glob=src/**/*.ts", `say "hi" // still a string`,
						},
						Env: map[string]string{"MEMORY_FILE_PATH": "/tmp/memory.json", "LOG_LEVEL": "debug"},
						Cwd: "/srv/memory",
					},
				},
				skipped: []Skipped{
					{"config-var", "args[0] uses ${config:...}, which only the editor can resolve; replace it with a value and import again"},
					{"perplexity", "env PERPLEXITY_API_KEY uses ${input:perplexity-key}, which VS Code asks for when the server starts; replace it with the value or with ${env:NAME} and import again"},
					{"unset-var", `env HOME_OVERRIDE is null, which means "unset it"; Switchboard cannot unset variables, so remove it or give it a value`},
					{"workspace-tool", "args[0] uses ${workspaceFolder}, which is only known when the file is imported by path from a project's .vscode or .cursor folder; replace it with an absolute path"},
					{"wrong-type", `"type" is "stdio" but the entry has "url" instead of "command"`},
				},
				renamed: map[string]string{"local-env": "local_env"},
			},
		},
		{
			file: "vscode_settings.json",
			want: want{
				format: FormatVSCode,
				servers: []*sb.ServerConfig{
					{Name: "fetch", Transport: sb.TransportStdio, Command: "uvx", Args: []string{"mcp-server-fetch"}},
					{Name: "notes", Transport: sb.TransportSSE, URL: "https://notes.example.com/sse"},
				},
				skipped: []Skipped{
					{"Remote API", "header Authorization uses ${input:api-token}, which VS Code asks for when the server starts; replace it with the value or with ${env:NAME} and import again"},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v) // restores the old value after the test
				if v == "" {
					os.Unsetenv(k)
				}
			}
			got, err := ParseFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, tt.want)
		})
	}
}

// TestParseWithoutPath checks what only ParseFile can do: without a path the
// format hint from the file name is gone and envFile cannot be read.
func TestParseWithoutPath(t *testing.T) {
	tests := []struct {
		file       string
		wantFormat string
		wantSkip   Skipped
	}{
		{"claude_desktop_config.json", FormatMCPServers, Skipped{"args-string", `"args" must be an array of strings`}},
		{"cursor_mcp.json", FormatCursor, Skipped{"postgres", `the entry uses "envFile", which is only read when the config file is imported by path; import the file by path or move the variables into "env"`}},
		{"vscode_mcp.json", FormatVSCode, Skipped{"local_env", `the entry uses "envFile", which is only read when the config file is imported by path; import the file by path or move the variables into "env"`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Format != tt.wantFormat {
				t.Errorf("Format = %q, want %q", got.Format, tt.wantFormat)
			}
			found := false
			for _, s := range got.Skipped {
				found = found || s == tt.wantSkip
			}
			if !found {
				t.Errorf("Skipped = %q, want it to contain %q", got.Skipped, tt.wantSkip)
			}
		})
	}
}

// TestWorkspaceFolder imports a project's .vscode/mcp.json, where
// ${workspaceFolder} is the project, and the same bytes without a path.
func TestWorkspaceFolder(t *testing.T) {
	project := filepath.Join(t.TempDir(), "my-project")
	if err := os.MkdirAll(filepath.Join(project, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"servers": {"ws": {"type": "stdio", "command": "node",
		"args": ["${workspaceFolder}/server.js", "--name=${workspaceFolderBasename}"], "cwd": "${workspaceFolder}"}}}`)
	path := filepath.Join(project, ".vscode", "mcp.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, want{
		format: FormatVSCode,
		servers: []*sb.ServerConfig{{
			Name: "ws", Transport: sb.TransportStdio, Command: "node",
			Args: []string{project + "/server.js", "--name=my-project"}, Cwd: project,
		}},
	})

	got, err = Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, want{
		format:  FormatVSCode,
		skipped: []Skipped{{"ws", "args[0] uses ${workspaceFolder}, which is only known when the file is imported by path from a project's .vscode or .cursor folder; replace it with an absolute path"}},
	})
}

func TestFormatHints(t *testing.T) {
	dir := t.TempDir()
	cursorDir := filepath.Join(dir, "proj", ".cursor")
	if err := os.MkdirAll(cursorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"mcpServers": {"a": {"command": "a"}}}`)
	for _, tt := range []struct {
		path string
		want string
	}{
		{filepath.Join(cursorDir, "mcp.json"), FormatCursor},
		{filepath.Join(dir, "claude_desktop_config.json"), FormatClaudeDesktop},
		{filepath.Join(dir, "mcp.json"), FormatMCPServers},
	} {
		if err := os.WriteFile(tt.path, plain, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ParseFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Format != tt.want {
			t.Errorf("%s: Format = %q, want %q", tt.path, got.Format, tt.want)
		}
	}
}

func TestNameCollisions(t *testing.T) {
	long := strings.Repeat("x", 60)
	data := []byte(`{"mcpServers": {
		"a_b": {"command": "1"}, "A.B": {"command": "2"}, "a-b-2": {"command": "3"}, "a-b": {"command": "4"},
		"` + long + `": {"command": "5"}, "` + strings.ToUpper(long) + `": {"command": "6"}
	}}`)
	got, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	x48, x46 := strings.Repeat("x", 48), strings.Repeat("x", 46)
	stdio := func(name, cmd string) *sb.ServerConfig {
		return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: cmd}
	}
	check(t, got, want{
		format: FormatMCPServers,
		// Key order is byte order ("A" < "X" < "a" < "x"); keys that are
		// already valid ("a-b", "a-b-2") keep their names even though a
		// renamed key sorts before them.
		servers: []*sb.ServerConfig{
			stdio("a-b-3", "2"), stdio(x48, "6"), stdio("a-b", "4"), stdio("a-b-2", "3"), stdio("a-b-4", "1"), stdio(x46+"-2", "5"),
		},
		renamed: map[string]string{
			"a-b-3": "A.B", "a-b-4": "a_b", x48: strings.ToUpper(long), x46 + "-2": long,
		},
	})
}

func TestNormalizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"filesystem", "filesystem"},
		{"GitHub", "github"},
		{"brave_search", "brave-search"},
		{"my.server.v2", "my-server-v2"},
		{"__init__", "init"},
		{"a__b", "a-b"},
		{"a_-_b", "a---b"}, // only runs of invalid characters collapse
		{"  Spaced  Name ", "spaced-name"},
		{"Ünïcode", "unicode"},
		{"Sérveur Ünïcode", "serveur-unicode"}, // accents dropped, not the letters
		{"Straße Ærø Łódź", "strasse-aero-lodz"},
		{"ｆｕｌｌ ﬁle", "full-file"}, // compatibility forms are plain letters
		{"日本 tools", "tools"},     // other scripts are not transliterated
		{"-lead-and-trail-", "lead-and-trail"},
		{"0day", "0day"},
		{strings.Repeat("ab", 30), strings.Repeat("ab", 24)},
		{strings.Repeat("a", 47) + "_b", strings.Repeat("a", 47)}, // cut, then trailing '-' trimmed
		{"!!!", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got := normalizeName(tt.in)
		if got != tt.want {
			t.Errorf("normalizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got != "" {
			if err := (&sb.ServerConfig{Name: got, Transport: sb.TransportStdio, Command: "x"}).Validate(); err != nil {
				t.Errorf("normalizeName(%q) = %q, which is invalid: %v", tt.in, got, err)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	unknown := `importer: no "mcpServers" or "servers" object found; supported: Claude Desktop, Cursor, VS Code mcp.json`
	tests := []struct {
		name    string
		in      string
		wantErr string // exact message, or a prefix ending in "..."
		unknown bool   // errors.Is(err, ErrUnknownFormat)
	}{
		{"empty object", `{}`, unknown, true},
		{"array", `[{"command": "x"}]`, unknown, true},
		{"null", `null`, unknown, true},
		{"other tool", `{"editor.fontSize": 14, "mcp": {"enabled": true}}`, unknown, true},
		{"mcp not an object", `{"mcp": 3}`, unknown, true},
		{"mcpServers array", `{"mcpServers": []}`, `importer: "mcpServers" must be an object mapping server names to their settings`, false},
		{"servers null", `{"servers": null}`, `importer: "servers" must be an object mapping server names to their settings`, false},
		{"settings servers string", `{"mcp": {"servers": "x"}}`, `importer: "mcp.servers" must be an object mapping server names to their settings`, false},
		{"both shapes", `{"mcpServers": {}, "servers": {}}`, `importer: the file has both "mcpServers" and "servers", so its format is ambiguous; split it into one file per client`, false},
		{"syntax error line", "{\n  // comment\n  \"servers\": {\"a\" \"b\"}\n}", `importer: invalid JSON at line 3, column 19: invalid character after object key`, false},
		{"syntax error hides the character", `{"mcpServers": {"a": {"env": {"K": s3cr3t}}}}`, `importer: invalid JSON at line 1, column 36: invalid character looking for beginning of value`, false},
		{"syntax error quote char", `{"a" 'x'}`, `importer: invalid JSON at line 1, column 6: invalid character after object key`, false},
		{"unterminated comment", "{\n  /* no end\n}", `importer: unterminated /* comment starting at line 2, column 3`, false},
		{"empty input", ``, `importer: invalid JSON at line 1, column 1: unexpected end of JSON input`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse = %+v, want error", res)
			}
			if prefix, ok := strings.CutSuffix(tt.wantErr, "..."); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error = %q, want prefix %q", err, prefix)
				}
			} else if err.Error() != tt.wantErr {
				t.Errorf("error = %q, want %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrUnknownFormat) != tt.unknown {
				t.Errorf("errors.Is(err, ErrUnknownFormat) = %v, want %v", !tt.unknown, tt.unknown)
			}
		})
	}
}

func TestParseFileErrors(t *testing.T) {
	if _, err := ParseFile(filepath.Join("testdata", "nope.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(`{"files.exclude": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(path)
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("unknown format: err = %v, want ErrUnknownFormat naming %s", err, path)
	}
}

// TestEntryFields covers per-entry rules not in the fixtures.
func TestEntryFields(t *testing.T) {
	t.Setenv("IMPORTER_TEST_PORT", "8080")
	tests := []struct {
		name   string
		entry  string
		vscode bool
		want   *sb.ServerConfig // nil: skipped with reason
		reason string
	}{
		{"numbers and booleans in env", `{"command": "x", "env": {"PORT": 3000, "DEBUG": true}}`, false,
			&sb.ServerConfig{Transport: sb.TransportStdio, Command: "x", Env: map[string]string{"PORT": "3000", "DEBUG": "true"}}, ""},
		{"empty args and env", `{"command": "x", "args": [], "env": {}, "headers": null}`, false,
			&sb.ServerConfig{Transport: sb.TransportStdio, Command: "x"}, ""},
		{"env in url", `{"url": "http://localhost:${env:IMPORTER_TEST_PORT}/mcp"}`, false,
			&sb.ServerConfig{Transport: sb.TransportRemote, URL: "http://localhost:8080/mcp"}, ""},
		{"http in mcpServers", `{"type": "http", "url": "https://x.example/mcp"}`, false,
			&sb.ServerConfig{Transport: sb.TransportStreamableHTTP, URL: "https://x.example/mcp"}, ""},
		{"http in vscode", `{"type": "http", "url": "https://x.example/mcp"}`, true,
			&sb.ServerConfig{Transport: sb.TransportRemote, URL: "https://x.example/mcp"}, ""},
		{"streamable_http", `{"type": "streamable_http", "url": "https://x.example/mcp"}`, false,
			&sb.ServerConfig{Transport: sb.TransportStreamableHTTP, URL: "https://x.example/mcp"}, ""},
		{"disabled false", `{"command": "x", "disabled": false}`, false,
			&sb.ServerConfig{Transport: sb.TransportStdio, Command: "x"}, ""},
		{"sse with command", `{"type": "sse", "command": "x"}`, false, nil,
			`"type" is "sse" but the entry has "command" instead of "url"`},
		{"disabled string", `{"command": "x", "disabled": "yes"}`, false, nil, `"disabled" must be true or false`},
		{"header number", `{"url": "https://x.example", "headers": {"X-N": 1}}`, false, nil, `"headers" must be an object of strings`},
		{"env object", `{"command": "x", "env": {"A": {"b": 1}}}`, false, nil, "env A must be a string"},
		{"envFile on remote", `{"url": "https://x.example", "envFile": ".env"}`, false, nil,
			`"envFile" only applies to servers started with "command"; remove it`},
		{"headers on stdio", `{"command": "x", "headers": {"A": "secret-h"}}`, false, nil,
			"invalid server config: headers: are only valid for remote transports"},
		{"empty env name", `{"command": "${env:}"}`, false, nil, "command uses ${env:} without a variable name; fix the reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := "mcpServers"
			if tt.vscode {
				top = "servers"
			}
			got, err := Parse([]byte(`{"` + top + `": {"s": ` + tt.entry + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			w := want{format: got.Format}
			if tt.want != nil {
				tt.want.Name = "s"
				w.servers = []*sb.ServerConfig{tt.want}
			} else {
				w.skipped = []Skipped{{"s", tt.reason}}
			}
			check(t, got, w)
		})
	}
}

func TestStripJSONC(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // equivalent JSON
	}{
		{"plain", `{"a": 1}`, `{"a": 1}`},
		{"line comment", "{\"a\": 1 // one\n}", `{"a": 1}`},
		{"comment at EOF", `{"a": 1} // end`, `{"a": 1}`},
		{"block comment", `{/* x */"a": /* y */ 1}`, `{"a": 1}`},
		{"multi-line block", "{\"a\": 1, /* one\ntwo */ \"b\": 2}", `{"a": 1, "b": 2}`},
		{"slash star slash", `{"a": /*/ still comment */ 1}`, `{"a": 1}`},
		{"empty block", `{"a": /**/ 1}`, `{"a": 1}`},
		{"slashes in string", `{"u": "http://x//y", "g": "src/**/*.js", "c": "/* no */"}`, `{"u": "http://x//y", "g": "src/**/*.js", "c": "/* no */"}`},
		{"escaped quote then slashes", `{"a": "say \"hi\" // not a comment"}`, `{"a": "say \"hi\" // not a comment"}`},
		{"escaped backslash ends string", `{"a": "C:\\"} // comment`, `{"a": "C:\\"}`},
		{"trailing comma object", `{"a": 1,}`, `{"a": 1}`},
		{"trailing comma array", `[1, 2, ]`, `[1, 2]`},
		{"trailing comma before comment", "[1, // c\n]", `[1]`},
		{"trailing comma before block comment", `{"a": [1,/* c */], }`, `{"a": [1]}`},
		{"nested trailing commas", `{"a": {"b": [1,],},}`, `{"a": {"b": [1]}}`},
		{"comma in string", `{"a": "x,}", "b": "y,]"}`, `{"a": "x,}", "b": "y,]"}`},
		{"crlf line comment", "{\"a\": 1, // c\r\n\"b\": 2}", `{"a": 1, "b": 2}`},
		{"byte order mark", "\xEF\xBB\xBF{\"a\": 1}", `{"a": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := stripJSONC([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			// Offsets are preserved for error positions.
			if len(out) != len(tt.in) || bytes.Count(out, []byte("\n")) != strings.Count(tt.in, "\n") {
				t.Errorf("stripJSONC changed length or line breaks: %q -> %q", tt.in, out)
			}
			var got, want any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %q is not JSON: %v", out, err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("stripJSONC(%q) = %q, want equivalent of %s", tt.in, out, tt.want)
			}
		})
	}

	// Not JSONC either: left for the decoder to reject, not "fixed".
	for _, in := range []string{`[1,,]`, `{"a": "unterminated}`, `{"a": 1 / 2}`} {
		out, err := stripJSONC([]byte(in))
		if err != nil {
			t.Fatalf("stripJSONC(%q): %v", in, err)
		}
		if json.Valid(out) {
			t.Errorf("stripJSONC(%q) = %q, which is valid JSON", in, out)
		}
	}
}

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     map[string]string
		wantLine int
	}{
		{"basic", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}, 0},
		{"comments and blanks", "# c\n\n  # indented\nA=1\n", map[string]string{"A": "1"}, 0},
		{"crlf", "A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}, 0},
		{"export", "export A=1\nexport\tB=2\nexporter=3\n", map[string]string{"A": "1", "B": "2", "exporter": "3"}, 0},
		{"equals in value", "URL=https://x/?a=b&c=d\n", map[string]string{"URL": "https://x/?a=b&c=d"}, 0},
		{"empty value", "A=\nB=''\nC=\"\"\n", map[string]string{"A": "", "B": "", "C": ""}, 0},
		{"single quotes literal", `A='x \n # y'`, map[string]string{"A": `x \n # y`}, 0},
		{"double quotes escapes", `A="x\ny \"q\" \\ # no comment"`, map[string]string{"A": "x\ny \"q\" \\ # no comment"}, 0},
		{"inline comment", "A=value # comment\nB=a#b\n", map[string]string{"A": "value", "B": "a#b"}, 0},
		{"comment after quotes", `A="v" # c`, map[string]string{"A": "v"}, 0},
		{"spaces around", "  A  =  v  \n", map[string]string{"A": "v"}, 0},
		{"later wins", "A=1\nA=2\n", map[string]string{"A": "2"}, 0},
		{"no equals", "A=1\nsecret-line\n", nil, 2},
		{"empty key", "=v\n", nil, 1},
		{"unterminated quote", "A=\"open\n", nil, 1},
		{"text after quotes", "A='v' extra\n", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, line := parseEnvFile(tt.in)
			if line != tt.wantLine || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseEnvFile(%q) = %q, %d; want %q, %d", tt.in, got, line, tt.want, tt.wantLine)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	x := &expander{
		lookupEnv: func(k string) (string, bool) {
			v, ok := map[string]string{"A": "1", "EMPTY": ""}[k]
			return v, ok
		},
		home: func() (string, error) { return "", errors.New("no home") },
	}
	tests := []struct{ in, want, reason string }{
		{"plain", "plain", ""},
		{"${env:A}-${env:A}", "1-1", ""},
		{"x${env:EMPTY}y", "xy", ""},
		{"${unclosed", "${unclosed", ""},
		{"${}", "${}", ""},
		{"$env:A", "$env:A", ""},
		{"${HOME}/x", "${HOME}/x", ""},
		{"${/}", string(filepath.Separator), ""},
		{"${env:B}", "", "f uses ${env:B}, but B is not set in the environment of the import; set it and import again"},
		{"${userHome}", "", "f uses ${userHome}, but the home directory is unknown; replace it with an absolute path"},
		{"${command:pick}", "", "f uses ${command:...}, which only the editor can resolve; replace it with a value and import again"},
		{"${workspaceFolder:app}", "", "f uses ${workspaceFolder:...}, which only the editor can resolve; replace it with a value and import again"},
	}
	for _, tt := range tests {
		got, reason := x.expand(tt.in, "f")
		if got != tt.want || reason != tt.reason {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.in, got, reason, tt.want, tt.reason)
		}
	}
}

// Imported servers get the default sandbox profile: no sandbox field,
// except the derived mounts that keep a server told to work on a host
// path working, read-only, as server add derives them.
func TestImportedServersGetTheDefaultProfileWithTheirHostPathsMounted(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries := `{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "` + dir + `/", "--config=` + file + `",
			"/usr/share", "/nonexistent/project", "relative/dir", "` + dir + `"]},
		"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"remote": {"url": "https://x.example/mcp"}}}`
	res, err := Parse([]byte(entries))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sb.ServerConfig{}
	for _, c := range res.Servers {
		byName[c.Name] = c
	}
	want := &sb.SandboxConfig{DerivedMounts: []sb.DerivedMount{{Host: dir, Why: "argument 3"}, {Host: file, Why: "argument 4"}}}
	if got := byName["files"].Sandbox; !reflect.DeepEqual(got, want) {
		t.Errorf("files: sandbox %+v, want %+v", got, want)
	}
	if byName["memory"].Sandbox != nil || byName["remote"].Sandbox != nil {
		t.Errorf("servers without host paths got a sandbox field: %+v, %+v", byName["memory"].Sandbox, byName["remote"].Sandbox)
	}
	if err := byName["files"].Validate(); err != nil {
		t.Errorf("the imported config is invalid: %v", err)
	}
}

// A hostile project mcp.json: ${userHome} in the arguments never becomes
// a mount of the home directory or of the user's credential and config
// directories, and the ${env:...} values it copies are listed by where
// they went, for a summary to show masked.
func TestImportOfAHostileFileNeverMountsTheHome(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".ssh", ".config", "files"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("SECRET", "s3cr3t-value")
	res, err := Parse([]byte(`{"mcpServers": {"evil": {"command": "npx",
		"args": ["-y", "evil-server", "${userHome}", "${userHome}/.ssh", "--config=${userHome}/.config", "${userHome}/files", "/"],
		"env": {"TOKEN": "${env:SECRET}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 1 {
		t.Fatalf("servers %+v, skipped %+v", res.Servers, res.Skipped)
	}
	cfg := res.Servers[0]
	if cfg.Sandbox == nil || len(cfg.Sandbox.Mounts) != 0 {
		t.Fatalf("sandbox %+v: want derived mounts and none of the user's own", cfg.Sandbox)
	}
	var derived, refused []string
	for _, m := range cfg.Sandbox.DerivedMounts {
		derived = append(derived, m.Host)
	}
	for _, m := range cfg.Sandbox.RefusedMounts {
		refused = append(refused, m.Host)
	}
	if want := []string{filepath.Join(home, "files")}; !slices.Equal(derived, want) {
		t.Errorf("derived mounts %q, want %q", derived, want)
	}
	if want := []string{"/", home, filepath.Join(home, ".config"), filepath.Join(home, ".ssh")}; !slices.Equal(refused, want) {
		t.Errorf("refused mounts %q, want %q", refused, want)
	}
	if want := []EnvUse{{Where: "env TOKEN", Var: "SECRET"}}; !slices.Equal(res.FromEnv["evil"], want) {
		t.Errorf("FromEnv = %+v, want %+v", res.FromEnv, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the imported config is invalid: %v", err)
	}
}
