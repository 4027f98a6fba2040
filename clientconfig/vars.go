package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// expander resolves the `${...}` variables that VS Code and Cursor allow in
// server entries. Claude Desktop has no variables, but a literal
// "${env:NAME}" there is almost certainly a config copied from Cursor, and
// the two formats cannot be told apart, so every format gets the same rules:
//
//   - ${env:NAME} is replaced by the variable from the importing process's
//     environment; if it is unset the server is skipped.
//   - ${userHome} is the user's home directory; ${pathSeparator} and ${/} are
//     the OS path separator.
//   - ${workspaceFolder} and ${workspaceFolderBasename} are known only when
//     the file is read by path from a project's .vscode or .cursor folder;
//     otherwise the server is skipped.
//   - ${input:ID} is a value VS Code prompts for when the server starts; an
//     import cannot ask, so the server is skipped with a reason naming ID.
//   - Any other ${prefix:...} (${config:...}, ${command:...}) only the editor
//     can resolve, so the server is skipped.
//   - Any other ${NAME} is left as written: it is not editor syntax, and it
//     may be meant for a shell (`sh -c "... ${TOKEN}"`) that expands it later.
//
// Reasons name the variable and where it was used, never its value.
type expander struct {
	workspace string                      // "" when unknown
	lookupEnv func(string) (string, bool) // os.LookupEnv
	home      func() (string, error)      // os.UserHomeDir
	sawCursor bool                        // a Cursor-only variable was resolved
	used      []EnvUse                    // the ${env:NAME} resolved since the last take
}

// EnvUse is one ${env:NAME} that an import resolved: the value of the
// importing process's variable Var was copied into the field Where
// ("env TOKEN", "args[2]", "header Authorization") of a stored config.
type EnvUse struct {
	Where string `json:"where"`
	Var   string `json:"var"`
}

// take returns the ${env:...} uses resolved since it was last called.
func (x *expander) take() []EnvUse {
	u := x.used
	x.used = nil
	return u
}

func newExpander(workspace string) *expander {
	return &expander{workspace: workspace, lookupEnv: os.LookupEnv, home: os.UserHomeDir}
}

// expand returns s with its variables resolved, or a reason (a sentence
// beginning with where) explaining why it cannot be.
func (x *expander) expand(s, where string) (string, string) {
	if !strings.Contains(s, "${") {
		return s, ""
	}
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			b.WriteString(s)
			return b.String(), ""
		}
		end := strings.IndexByte(s[start:], '}')
		if end < 0 {
			b.WriteString(s) // an unclosed "${" is just text
			return b.String(), ""
		}
		name := s[start+2 : start+end]
		val, ok, reason := x.lookup(name, where)
		if reason != "" {
			return "", reason
		}
		b.WriteString(s[:start])
		if ok {
			b.WriteString(val)
		} else {
			b.WriteString(s[start : start+end+1])
		}
		s = s[start+end+1:]
	}
}

// lookup resolves one variable name (the text between "${" and "}"). ok is
// false for a name that is left as written.
func (x *expander) lookup(name, where string) (val string, ok bool, reason string) {
	prefix, arg, hasColon := strings.Cut(name, ":")
	switch {
	case hasColon && prefix == "env" && arg == "":
		return "", false, where + " uses ${env:} without a variable name; fix the reference"
	case hasColon && prefix == "env":
		v, set := x.lookupEnv(arg)
		if !set {
			return "", false, fmt.Sprintf("%s uses ${env:%s}, but %s is not set in the environment of the import; set it and import again", where, arg, arg)
		}
		x.sawCursor = true
		x.used = append(x.used, EnvUse{Where: where, Var: arg})
		return v, true, ""
	case hasColon && prefix == "input":
		return "", false, fmt.Sprintf("%s uses ${input:%s}, which VS Code asks for when the server starts; replace it with the value or with ${env:NAME} and import again", where, arg)
	case hasColon:
		return "", false, fmt.Sprintf("%s uses ${%s:...}, which only the editor can resolve; replace it with a value and import again", where, prefix)
	case name == "userHome":
		h, err := x.home()
		if err != nil || h == "" {
			return "", false, fmt.Sprintf("%s uses ${userHome}, but the home directory is unknown; replace it with an absolute path", where)
		}
		x.sawCursor = true
		return h, true, ""
	case name == "pathSeparator" || name == "/":
		x.sawCursor = true
		return string(filepath.Separator), true, ""
	case name == "workspaceFolder" || name == "workspaceFolderBasename":
		if x.workspace == "" {
			return "", false, fmt.Sprintf("%s uses ${%s}, which is only known when the file is imported by path from a project's .vscode or .cursor folder; replace it with an absolute path", where, name)
		}
		x.sawCursor = true
		if name == "workspaceFolderBasename" {
			return filepath.Base(x.workspace), true, ""
		}
		return x.workspace, true, ""
	}
	return "", false, ""
}
