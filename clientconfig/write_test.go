package clientconfig

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-mcp/switchboard/client"
)

// The snippets refer to the variable the CLI itself reads the token from.
func TestSnippetsReadTheCLIsTokenVariable(t *testing.T) {
	if envToken != client.EnvToken {
		t.Fatalf("envToken %q, client.EnvToken %q", envToken, client.EnvToken)
	}
	cfg, notes := HTTPSnippet("cursor", "http://127.0.0.1:7420", "", "tok", false, false, "/home/u/.config/switchboard/token")
	if got := cfg.MCPServers["switchboard"].Headers["Authorization"]; got != "Bearer ${env:"+client.EnvToken+"}" {
		t.Errorf("cursor's header %q", got)
	}
	if len(notes) != 1 {
		t.Errorf("notes %q", notes)
	}
}

// WriteFile makes a missing directory, writes mode 0600 and leaves a file
// that exists alone, with fs.ErrExist.
func TestWriteFileMakesANewPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	if err := WriteFile(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v, %v; want mode 0600", fi, err)
	}
	if err := WriteFile(path, []byte("other\n")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{}\n" {
		t.Fatalf("the file was changed: %q", b)
	}
}
