package clientconfig

// This file makes what "switchboard client-config" prints: the entry of
// one client's config, as JSON, with notes for the person who installs
// it. Its errors name client-config's flags.

import (
	"encoding/json"
	"fmt"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/store"
)

// Request is what client-config is asked for.
type Request struct {
	Client  string // a key of Clients
	Toolset string // "": every server
	DSN     string // claude: the database "switchboard stdio" serves

	// Daemon returns the address of the daemon the HTTP clients reach and
	// the credential to send it ("": none), asked only for them;
	// TokenGiven says the credential came with the command (--token,
	// --token-file or SWITCHBOARD_TOKEN), not from this user's credential
	// file, CredentialFile. Embed puts it in the snippet instead of a
	// reference to it.
	Daemon            func() (addr, token string, err error)
	CredentialFile    string
	TokenGiven, Embed bool
}

// Snippet is the entry of a client's config that reaches Switchboard.
type Snippet struct {
	JSON  []byte   // indented, with a final newline
	Notes []string // for the person who installs it
	// BaseURL is the daemon the HTTP clients reach ("" for claude), and
	// NoCredential says the snippet sends it none.
	BaseURL      string
	NoCredential bool
}

// Make returns the snippet r asks for: claude runs "switchboard stdio" on
// r.DSN (Stdio), the others reach the daemon r.Daemon names (HTTPSnippet). A
// toolset over HTTP needs a token of it, never the daemon's own
// credential, which reaches every server.
func Make(r Request) (*Snippet, error) {
	if r.Toolset != "" && !sb.IsName(r.Toolset) {
		return nil, fmt.Errorf("--toolset %q is not a toolset name (lowercase letters, digits and '-')", r.Toolset)
	}
	var (
		s       Snippet
		snippet any
	)
	if r.Client == "claude" {
		cfg, err := Stdio(r.DSN, r.Toolset)
		if err != nil {
			return nil, err
		}
		snippet = cfg
		s.Notes = append(s.Notes, "Claude Desktop starts local servers as commands, so this runs \"switchboard stdio\" on "+store.Redact(cfg.MCPServers[EntryName(r.Toolset)].Env["SWITCHBOARD_DB"])+
			": it needs no daemon and no credential, and runs that database's servers itself")
	} else {
		addr, token, err := r.Daemon()
		if err != nil {
			return nil, err
		}
		if r.Toolset != "" && !r.TokenGiven {
			return nil, fmt.Errorf("--toolset %s: pass a token of that toolset with --token or SWITCHBOARD_TOKEN (make one with: switchboard token create AGENT --scope toolset:%s); "+
				"the daemon's own credential reaches every server, which a toolset is there to prevent", r.Toolset, r.Toolset)
		}
		if own, _ := client.CredentialFor(addr); r.Toolset != "" && own != "" && token == own {
			return nil, fmt.Errorf("--toolset %s: the token given is the daemon's own credential, which reaches every server; pass a token of that toolset (switchboard token create AGENT --scope toolset:%s)", r.Toolset, r.Toolset)
		}
		c, err := client.New(addr, "", nil)
		if err != nil {
			return nil, fmt.Errorf("--addr: %w", err)
		}
		c.Close()
		s.BaseURL, s.NoCredential = c.BaseURL(), token == ""
		snippet, s.Notes = HTTPSnippet(r.Client, s.BaseURL, r.Toolset, token, r.Embed, r.TokenGiven, r.CredentialFile)
	}
	b, err := json.MarshalIndent(snippet, "", "  ")
	if err != nil {
		return nil, err
	}
	s.JSON = append(b, '\n')
	return &s, nil
}
