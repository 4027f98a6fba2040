package clientconfig

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Make asks for the daemon only for an HTTP client, and refuses a toolset
// snippet without a token of the toolset.
func TestMakeRefusesAToolsetWithoutItsToken(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no credential file of this user
	asked := 0
	daemon := func(token string) func() (string, string, error) {
		return func() (string, string, error) { asked++; return "127.0.0.1:7420", token, nil }
	}
	if _, err := Make(Request{Client: "cursor", Toolset: "Coder", Daemon: daemon("")}); err == nil || !strings.Contains(err.Error(), "not a toolset name") || asked != 0 {
		t.Errorf("toolset Coder: %v (daemon asked %d times); want it refused first", err, asked)
	}
	if _, err := Make(Request{Client: "cursor", Toolset: "coder", Daemon: daemon("")}); err == nil || !strings.Contains(err.Error(), "pass a token of that toolset") {
		t.Errorf("toolset without a token: %v", err)
	}
	if _, err := Make(Request{Client: "cursor", Daemon: func() (string, string, error) { return "", "", errors.New("--token-file: bad") }}); err == nil || err.Error() != "--token-file: bad" {
		t.Errorf("the daemon's error: %v", err)
	}
	s, err := Make(Request{Client: "vscode", Toolset: "coder", TokenGiven: true, Daemon: daemon("sbt_x")})
	if err != nil {
		t.Fatal(err)
	}
	var cfg HTTPConfig
	if err := json.Unmarshal(s.JSON, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["switchboard-coder"]; got.URL != "http://127.0.0.1:7420/toolsets/coder/mcp" || got.Headers["Authorization"] != "Bearer sbt_x" ||
		s.BaseURL != "http://127.0.0.1:7420" || s.NoCredential || !strings.HasSuffix(string(s.JSON), "}\n") {
		t.Errorf("vscode snippet of toolset coder: %+v, %s", s, s.JSON)
	}
	if s, err := Make(Request{Client: "cursor", Daemon: daemon("")}); err != nil || !s.NoCredential {
		t.Errorf("no credential: %+v, %v; want NoCredential", s, err)
	}
}
