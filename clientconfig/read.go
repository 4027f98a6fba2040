// Package clientconfig reads and writes the config files of MCP clients
// (Claude Desktop, Claude Code, Cursor, VS Code). Reading ([Parse],
// [ParseFile], [Import]) turns another client's server list into
// Switchboard server configs, reporting each entry it could not import
// and why; writing ([HTTPSnippet], [Stdio], [WriteFile]) makes the entry
// a client's file takes to reach Switchboard itself.
//
// Errors of reading start with "importer: ", as they did when this was
// package importer: the API and the CLI show them as they are.
//
// # Formats
//
// A file whose top-level object has "mcpServers" is the Claude Desktop
// format, which Cursor (~/.cursor/mcp.json, .cursor/mcp.json) and many other
// clients copied. The two cannot be told apart by shape alone, so [Result]
// reports [FormatClaudeDesktop] or [FormatCursor] only when the file gives a
// hint (its name or folder, or a Cursor-only feature such as "envFile" or a
// ${env:NAME} variable) and [FormatMCPServers] otherwise. The mapping is the
// same in every case.
//
// A file with a top-level "servers" object is VS Code's mcp.json; a VS Code
// settings.json with {"mcp": {"servers": ...}} is read the same way. Both
// report [FormatVSCode].
//
// All files may contain // and /* */ comments and trailing commas (JSONC).
//
// # Mapping
//
//   - An entry with "command" becomes transport stdio; one with "url" becomes
//     remote (Streamable HTTP with SSE fallback), unless "type" says "sse"
//     (transport sse) or "streamable-http", "streamableHttp" or
//     "streamable_http" (transport streamable-http). "type": "http" means
//     streamable-http in the mcpServers format (Claude Code writes it for
//     Streamable HTTP servers) but remote in VS Code files, because VS Code
//     itself falls back to SSE for "http" servers and an import must not stop
//     a server that worked there from working here.
//   - "disabled": true becomes enabled: false.
//   - "envFile" is read only by [ParseFile], relative to the config file's
//     directory; values in "env" override those from the file. A relative
//     "cwd" is also resolved against that directory by [ParseFile] and left
//     as written by [Parse].
//   - ${...} variables (VS Code and Cursor syntax) are resolved at import
//     time or the entry is skipped with a reason naming the variable, in
//     every format, since a Cursor file cannot be told from a Claude Desktop
//     one: ${env:NAME} comes from the importing process's environment and
//     skips the entry if unset; ${userHome}, ${pathSeparator} and ${/} are
//     resolved; ${workspaceFolder} and ${workspaceFolderBasename} only when
//     [ParseFile] reads a project's .vscode or .cursor folder; ${input:ID}
//     (a value VS Code prompts for) and other ${prefix:...} forms always
//     skip the entry. A plain ${NAME} is left as written, since it may be
//     meant for a shell the server's command runs.
//   - Names are normalised to Switchboard's rule (see [Result.Renamed]).
//   - Imported servers get the default sandbox profile, which hides the
//     host beyond the system directories, with the derived mounts that
//     server add would give them (sandbox.Apply): what the command runs
//     (a node_modules tree, an interpreter behind a shim, a venv), and
//     every argument that is an absolute path existing on this machine,
//     alone or as --flag=PATH, read-only. Paths the sandbox shows anyway
//     or provides itself are left out. The home directory, the user's
//     config and state directories and / are never mounted, however the
//     file names them (${userHome} included): they are listed in the
//     config's refused mounts instead.
//   - ${env:NAME} values are copied into the config; [Result.FromEnv]
//     says which, and where, so that a summary can show them masked.
//   - Unknown fields (autoApprove, timeout, description, ...) are ignored.
//
// Entries that cannot be imported are listed in [Result.Skipped] with a
// reason. Reasons and errors name fields, keys and variables but never an env
// or header value, which are usually secrets.
package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	switchboard "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/sandbox"
)

// Format names reported in [Result.Format].
const (
	// FormatClaudeDesktop is a claude_desktop_config.json file.
	FormatClaudeDesktop = "claude-desktop"
	// FormatCursor is an "mcpServers" file that is Cursor's by its location
	// (a .cursor folder) or because it uses a feature Claude Desktop lacks.
	FormatCursor = "cursor"
	// FormatMCPServers is an "mcpServers" file with no hint of which client
	// wrote it; Claude Desktop, Cursor and others share this shape.
	FormatMCPServers = "claude-desktop/cursor"
	// FormatVSCode is a VS Code mcp.json ("servers") or settings.json
	// ("mcp": {"servers"}).
	FormatVSCode = "vscode"
)

// ErrUnknownFormat is returned (wrapped) for a file that is valid JSON but
// holds no server list this package knows.
var ErrUnknownFormat = errors.New(`no "mcpServers" or "servers" object found; supported: Claude Desktop, Cursor, VS Code mcp.json`)

// maxConfigSize bounds a file read by ParseFile; real client configs are a
// few kilobytes, so anything near this is the wrong file.
const maxConfigSize = 16 << 20

// Result is what one file yielded.
type Result struct {
	// Format is one of the Format constants.
	Format string
	// Servers are the imported configs, each valid by
	// [switchboard.ServerConfig.Validate], sorted by their key in the file
	// (JSON objects have no order that survives decoding).
	Servers []*switchboard.ServerConfig
	// Skipped lists the entries not imported, in key order.
	Skipped []Skipped
	// Renamed maps each imported name that differs from its key in the file
	// to that key (new name → original). A key is renamed when it breaks
	// Switchboard's name rule (lowercase letters, digits and '-', at most 48)
	// or when its normalised form is taken, which adds "-2", "-3", ....
	// Keys that already follow the rule keep their name. Nil if none.
	Renamed map[string]string
	// FromEnv lists, by imported name, the ${env:NAME} variables whose
	// values (from the importing process's environment) the config holds,
	// and where: a summary shows them, masked, before they are stored. Nil
	// if none.
	FromEnv map[string][]EnvUse
}

// Skipped is one entry of the file that was not imported.
type Skipped struct {
	Name   string // the key in the file
	Reason string // a sentence a person can act on
}

// source is what is known about where the bytes came from.
type source struct {
	path      string // absolute path of the file; "" for Parse
	dir       string // directory of path; "" for Parse
	workspace string // project folder for ${workspaceFolder}; "" if unknown
}

// Parse detects the format of a client config file's contents and converts
// its servers. It cannot read "envFile" entries (there is no directory to
// resolve them against) and skips them; use [ParseFile] for those.
func Parse(data []byte) (*Result, error) {
	res, err := parse(data, source{})
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	return res, nil
}

// ParseFile reads the client config file at path and converts its servers
// like [Parse], additionally reading "envFile" entries and resolving relative
// paths against the file's directory. ${workspaceFolder} is resolved when the
// file sits in a project's .vscode or .cursor folder (but not the global
// ~/.cursor/mcp.json, whose workspace depends on the open project).
func ParseFile(path string) (*Result, error) {
	data, err := readLimited(path, maxConfigSize)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err) // *os.PathError names the path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	dir := filepath.Dir(abs)
	res, err := parse(data, source{path: abs, dir: dir, workspace: workspaceOf(dir)})
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	return res, nil
}

// errTooLarge is returned by readLimited for a file over its limit.
var errTooLarge = errors.New("file is too large")

// readLimited reads a whole file but refuses one larger than limit.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w (%d MiB)", errTooLarge, limit>>20)
	}
	return data, nil
}

// workspaceOf returns the project folder of a config in dir, or "" when the
// folder is not a project's .vscode or .cursor.
func workspaceOf(dir string) string {
	if b := filepath.Base(dir); b != ".vscode" && b != ".cursor" {
		return ""
	}
	ws := filepath.Dir(dir)
	if home, err := os.UserHomeDir(); err == nil && filepath.Clean(home) == ws {
		return "" // ~/.cursor/mcp.json applies to every project
	}
	return ws
}

// quotedChar matches the quoted character in encoding/json syntax errors
// ("invalid character 'x' after object key").
var quotedChar = regexp.MustCompile(`character '(?:\\.|[^'])*' `)

// parser converts the entries of one file.
type parser struct {
	src        source
	host       sandbox.Host // whose home and private directories derivation refuses
	vscode     bool         // VS Code dialect: "type": "http" means remote
	x          *expander
	sawEnvFile bool // an entry has "envFile", which Claude Desktop lacks
}

func parse(data []byte, src source) (*Result, error) {
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, max(int(se.Offset)-1, 0))
			// The decoder quotes the offending character, which could be
			// part of a secret in a broken file; line and column suffice.
			msg := quotedChar.ReplaceAllString(se.Error(), "character ")
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, msg)
		}
		return nil, ErrUnknownFormat // valid JSON, but not an object
	}

	p := &parser{src: src, host: sandbox.HostOf(), x: newExpander(src.workspace)}
	var list json.RawMessage
	var field string
	ms, hasMS := top["mcpServers"]
	vs, hasVS := top["servers"]
	switch {
	case hasMS && hasVS:
		return nil, errors.New(`the file has both "mcpServers" and "servers", so its format is ambiguous; split it into one file per client`)
	case hasMS:
		list, field = ms, "mcpServers"
	case hasVS:
		list, field, p.vscode = vs, "servers", true
	default:
		var settings map[string]json.RawMessage
		if raw, ok := top["mcp"]; ok && json.Unmarshal(raw, &settings) == nil {
			if s, ok := settings["servers"]; ok {
				list, field, p.vscode = s, "mcp.servers", true
			}
		}
	}
	if field == "" {
		return nil, ErrUnknownFormat
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(list, &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%q must be an object mapping server names to their settings", field)
	}

	res := &Result{}
	fromEnv := map[*switchboard.ServerConfig][]EnvUse{}
	var imported []*switchboard.ServerConfig
	var keys []string
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		name := normalizeName(key)
		if name == "" {
			res.Skipped = append(res.Skipped, Skipped{key, "the name has no ASCII letter or digit to build a Switchboard name from; rename it"})
			continue
		}
		cfg, reason := p.convert(entries[key])
		uses := p.x.take()
		if reason == "" {
			cfg.Name = name // valid by construction; the final name may add a suffix
			if err := cfg.Validate(); err != nil {
				reason = err.Error()
			}
		}
		if reason != "" {
			res.Skipped = append(res.Skipped, Skipped{key, reason})
			continue
		}
		imported = append(imported, cfg)
		keys = append(keys, key)
		if len(uses) > 0 {
			fromEnv[cfg] = uses
		}
	}
	res.Servers, res.Renamed = imported, assignNames(imported, keys)
	for cfg, uses := range fromEnv {
		if res.FromEnv == nil {
			res.FromEnv = map[string][]EnvUse{}
		}
		res.FromEnv[cfg.Name] = uses
	}

	switch {
	case p.vscode:
		res.Format = FormatVSCode
	case strings.EqualFold(filepath.Base(src.path), "claude_desktop_config.json"):
		res.Format = FormatClaudeDesktop
	case src.dir != "" && filepath.Base(src.dir) == ".cursor", p.sawEnvFile, p.x.sawCursor:
		res.Format = FormatCursor
	default:
		res.Format = FormatMCPServers
	}
	return res, nil
}

// assignNames gives each config its final name and returns the renames.
// cfgs[i].Name holds the normalised form of keys[i].
//
// Keys that are already valid names claim them first, so that importing a
// file never renames an entry whose name was fine, whatever the key order;
// the others then take their normalised name or the first free "-N" form.
func assignNames(cfgs []*switchboard.ServerConfig, keys []string) map[string]string {
	taken := map[string]bool{}
	for i, c := range cfgs {
		if c.Name == keys[i] {
			taken[c.Name] = true
		}
	}
	var renamed map[string]string
	for i, c := range cfgs {
		if c.Name == keys[i] {
			continue
		}
		name := c.Name
		for n := 2; taken[name]; n++ {
			name = suffixName(c.Name, n)
		}
		taken[name] = true
		c.Name = name
		if renamed == nil {
			renamed = map[string]string{}
		}
		renamed[name] = keys[i]
	}
	return renamed
}

// entry is one server entry as written, before variables are resolved.
type entry struct {
	Type     string
	Command  string
	Args     []string
	Env      map[string]json.RawMessage
	EnvFile  string
	Cwd      string
	URL      string
	Headers  map[string]string
	Disabled bool
}

// decodeEntry reads the fields this package uses, field by field, so that a
// wrong type is reported by field name rather than as a decoder message.
func decodeEntry(raw json.RawMessage) (*entry, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, `the entry is not a JSON object with "command" or "url"`
	}
	e := &entry{}
	fields := []struct {
		name string
		dst  any
		want string
	}{
		{"type", &e.Type, "a string"},
		{"command", &e.Command, "a string"},
		{"args", &e.Args, "an array of strings"},
		{"env", &e.Env, "an object"},
		{"envFile", &e.EnvFile, "a string"},
		{"cwd", &e.Cwd, "a string"},
		{"url", &e.URL, "a string"},
		{"headers", &e.Headers, "an object of strings"},
		{"disabled", &e.Disabled, "true or false"},
	}
	for _, f := range fields {
		v, ok := obj[f.name]
		if !ok || string(v) == "null" {
			continue
		}
		if json.Unmarshal(v, f.dst) != nil {
			return nil, fmt.Sprintf("%q must be %s", f.name, f.want)
		}
	}
	return e, ""
}

// convert turns one entry into a config without a name, or returns why it
// cannot.
func (p *parser) convert(raw json.RawMessage) (*switchboard.ServerConfig, string) {
	e, reason := decodeEntry(raw)
	if reason != "" {
		return nil, reason
	}
	if e.EnvFile != "" {
		p.sawEnvFile = true
	}
	transport, reason := p.transport(e)
	if reason != "" {
		return nil, reason
	}

	// Resolve variables field by field, in a fixed order, so that the reason
	// names the first offending place deterministically.
	x := p.x
	cfg := &switchboard.ServerConfig{Transport: transport}
	if cfg.Command, reason = x.expand(e.Command, "command"); reason != "" {
		return nil, reason
	}
	for i, a := range e.Args {
		v, reason := x.expand(a, fmt.Sprintf("args[%d]", i))
		if reason != "" {
			return nil, reason
		}
		cfg.Args = append(cfg.Args, v)
	}
	env := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		v, reason := envString(k, e.Env[k])
		if reason != "" {
			return nil, reason
		}
		if env[k], reason = x.expand(v, "env "+k); reason != "" {
			return nil, reason
		}
	}
	envFile, reason := x.expand(e.EnvFile, "envFile")
	if reason != "" {
		return nil, reason
	}
	if cfg.Cwd, reason = x.expand(e.Cwd, "cwd"); reason != "" {
		return nil, reason
	}
	if cfg.URL, reason = x.expand(e.URL, "url"); reason != "" {
		return nil, reason
	}
	headers := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		if headers[k], reason = x.expand(e.Headers[k], "header "+k); reason != "" {
			return nil, reason
		}
	}

	if envFile != "" {
		if transport != switchboard.TransportStdio {
			return nil, `"envFile" only applies to servers started with "command"; remove it`
		}
		fileEnv, reason := p.loadEnvFile(envFile)
		if reason != "" {
			return nil, reason
		}
		for k, v := range fileEnv {
			if _, ok := env[k]; !ok { // "env" wins over the file
				env[k] = v
			}
		}
	}
	if cfg.Cwd != "" && p.src.dir != "" && !filepath.IsAbs(cfg.Cwd) {
		cfg.Cwd = filepath.Join(p.src.dir, cfg.Cwd)
	}
	if len(env) > 0 {
		cfg.Env = env
	}
	if transport == switchboard.TransportStdio {
		sandbox.Apply(cfg, p.host)
	}
	if len(headers) > 0 {
		cfg.Headers = headers
	}
	if e.Disabled {
		enabled := false
		cfg.Enabled = &enabled
	}
	return cfg, ""
}

// transport picks the Switchboard transport from "type" and which of
// "command" and "url" the entry has.
func (p *parser) transport(e *entry) (switchboard.Transport, string) {
	hasCmd := strings.TrimSpace(e.Command) != ""
	hasURL := strings.TrimSpace(e.URL) != ""
	switch {
	case hasCmd && hasURL:
		return "", `the entry has both "command" and "url"; keep the one for how the server should be reached`
	case !hasCmd && !hasURL:
		return "", `the entry has neither "command" nor "url", so there is nothing to start or connect to`
	}
	var remote switchboard.Transport
	switch typ := strings.ToLower(e.Type); typ {
	case "":
		if hasCmd {
			return switchboard.TransportStdio, ""
		}
		return switchboard.TransportRemote, ""
	case "stdio":
		if !hasCmd {
			return "", `"type" is "stdio" but the entry has "url" instead of "command"`
		}
		return switchboard.TransportStdio, ""
	case "sse":
		remote = switchboard.TransportSSE
	case "http":
		remote = switchboard.TransportStreamableHTTP
		if p.vscode {
			remote = switchboard.TransportRemote
		}
	case "streamable-http", "streamablehttp", "streamable_http":
		remote = switchboard.TransportStreamableHTTP
	default:
		return "", fmt.Sprintf(`"type" %q is not supported; use "stdio", "http", "streamable-http" or "sse"`, e.Type)
	}
	if !hasURL {
		return "", fmt.Sprintf(`"type" is %q but the entry has "command" instead of "url"`, e.Type)
	}
	return remote, ""
}

// envString converts one "env" value. VS Code allows numbers and booleans,
// which become their JSON text, and null, which unsets an inherited variable;
// Switchboard can only add variables, so null skips the entry.
func envString(key string, raw json.RawMessage) (string, string) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Sprintf("env %s must be a string", key)
	}
	switch v := v.(type) {
	case string:
		return v, ""
	case float64, bool:
		return string(raw), ""
	case nil:
		return "", fmt.Sprintf("env %s is null, which means \"unset it\"; Switchboard cannot unset variables, so remove it or give it a value", key)
	}
	return "", fmt.Sprintf("env %s must be a string", key)
}

// loadEnvFile reads an "envFile" (after variable resolution) relative to the
// config file's directory.
func (p *parser) loadEnvFile(path string) (map[string]string, string) {
	if p.src.dir == "" {
		return nil, `the entry uses "envFile", which is only read when the config file is imported by path; import the file by path or move the variables into "env"`
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := p.x.home()
		if err != nil || home == "" {
			return nil, fmt.Sprintf("envFile %s starts with ~, but the home directory is unknown; use an absolute path", path)
		}
		path = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.src.dir, path)
	}
	data, err := readLimited(path, maxEnvFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Sprintf(`envFile %s does not exist; create it or remove "envFile"`, path)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the sentence
		}
		return nil, fmt.Sprintf("envFile %s cannot be read (%v)", path, err)
	}
	env, line := parseEnvFile(string(data))
	if line > 0 {
		return nil, fmt.Sprintf("envFile %s line %d is not KEY=VALUE; fix or remove that line", path, line)
	}
	return env, ""
}
