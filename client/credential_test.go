package client_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/switchboard-mcp/switchboard/client"
)

// TestLoadOrCreateCredential: the first call generates a token into a
// file of mode 0600 in a directory of mode 0700 whatever the umask, every
// later or concurrent call gets the same token, and exactly one call says
// it generated it.
func TestLoadOrCreateCredential(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "config", "switchboard", "token")
	const n = 8
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		tokens    = map[string]bool{}
		generated int
	)
	for range n {
		wg.Go(func() {
			tok, created, err := client.LoadOrCreateCredential(path)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			tokens[tok] = true
			if created {
				generated++
			}
		})
	}
	wg.Wait()
	if len(tokens) != 1 || generated != 1 {
		t.Fatalf("%d concurrent starts: %d tokens, %d generated; want 1 and 1", n, len(tokens), generated)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %#o", p, fi.Mode(), err, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left beside the credential: %v", entries)
	}
	tok, err := client.ReadCredential(path)
	if err != nil || !tokens[tok] || len(tok) != 64 {
		t.Errorf("ReadCredential: %q %v", tok, err)
	}
}

// TestReadCredentialRefusesWhatIsNotPrivate: a file or directory that
// others may read, a file that is not a regular file (a FIFO without
// waiting for a writer), and a file that is not one token are refused with
// a message naming the path; a missing file is fs.ErrNotExist.
func TestReadCredentialRefusesWhatIsNotPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "switchboard")
	path := filepath.Join(dir, "token")
	if _, err := client.ReadCredential(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no file: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := client.LoadOrCreateCredential(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		spoil, restore func() error
		want           string
	}{
		{"world-readable file", func() error { return os.Chmod(path, 0o604) }, func() error { return os.Chmod(path, 0o600) }, "mode 0604"},
		{"group-writable file", func() error { return os.Chmod(path, 0o620) }, func() error { return os.Chmod(path, 0o600) }, "mode 0620"},
		{"world-readable directory", func() error { return os.Chmod(dir, 0o755) }, func() error { return os.Chmod(dir, 0o700) }, "mode 0755"},
		{"empty file", func() error { return os.WriteFile(path, []byte("\n"), 0o600) }, nil, "empty"},
		{"two words", func() error { return os.WriteFile(path, []byte("a b\n"), 0o600) }, nil, "one word"},
		{"a directory", func() error { os.Remove(path); return os.Mkdir(path, 0o700) }, func() error { return os.Remove(path) }, "not a regular file"},
		{"a FIFO", func() error { os.Remove(path); return syscall.Mkfifo(path, 0o600) }, func() error { return os.Remove(path) }, "not a regular file"},
	} {
		if err := tc.spoil(); err != nil {
			t.Fatal(err)
		}
		_, err := client.ReadCredential(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want an error naming %s and %q", tc.name, err, dir, tc.want)
		}
		if _, _, err2 := client.LoadOrCreateCredential(path); err2 == nil {
			t.Errorf("%s: LoadOrCreateCredential used it", tc.name)
		}
		if tc.restore != nil {
			if err := tc.restore(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(path, []byte("my-own-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := client.ReadCredential(path); err != nil || tok != "my-own-token" {
		t.Errorf("a token written by hand: %q %v", tok, err)
	}
}

// TestCredentialForLoopbackOnly: the local credential file goes to a
// daemon on loopback only, never to another host that would learn it;
// the environment's token goes wherever the address says.
func TestCredentialForLoopbackOnly(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv(client.EnvToken, "")
	for _, addr := range []string{"127.0.0.1:7420", "http://localhost:1", "http://[::1]:2", "LOCALHOST:3", "https://127.0.0.2/prefix"} {
		if tok, err := client.CredentialFor(addr); tok != "" || err != nil {
			t.Errorf("CredentialFor(%q) without a file: %q %v", addr, tok, err)
		}
	}
	path, err := client.CredentialPath()
	if err != nil || path != filepath.Join(config, "switchboard", "token") {
		t.Fatalf("CredentialPath() = %q, %v", path, err)
	}
	want, _, err := client.LoadOrCreateCredential(path)
	if err != nil {
		t.Fatal(err)
	}
	for addr, local := range map[string]bool{
		"127.0.0.1:7420": true, "http://localhost:1": true, "http://[::1]:2": true, "LOCALHOST:3": true, "https://127.0.0.2/prefix": true,
		"10.0.0.1:9": false, "https://example.com": false, "http://localhost.example.com:1": false, "http://[::ffff:10.0.0.1]:1": false,
	} {
		tok, err := client.CredentialFor(addr)
		if err != nil || (tok == want) != local {
			t.Errorf("CredentialFor(%q) = %q, %v; want the credential: %v", addr, tok, err, local)
		}
		t.Setenv(client.EnvAddr, addr)
		if _, tok := client.Env(); (tok == want) != local {
			t.Errorf("Env() for %q: token %q, want the credential: %v", addr, tok, local)
		}
	}
	t.Setenv(client.EnvToken, "from-env")
	if _, tok := client.Env(); tok != "from-env" {
		t.Errorf("Env() with SWITCHBOARD_TOKEN: %q", tok)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if tok, err := client.CredentialFor("127.0.0.1:1"); tok != "" || !errors.Is(err, client.ErrUntrustedCredential) {
		t.Errorf("CredentialFor with a world-readable file: %q %v", tok, err)
	}
}

// Target takes what the command was given first, then the environment,
// then this user's credential file for a daemon on loopback.
func TestTargetTakesTheFlagsThenTheEnvironment(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv(client.EnvAddr, "")
	t.Setenv(client.EnvToken, "")
	if addr, tok, err := client.Target("", "", ""); addr != client.DefaultAddr || tok != "" || err != nil {
		t.Errorf("Target() with nothing given: %q %q %v", addr, tok, err)
	}
	path, _ := client.CredentialPath()
	own, _, err := client.LoadOrCreateCredential(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, tok, err := client.Target("127.0.0.1:1", "", ""); tok != own || err != nil {
		t.Errorf("Target on loopback: %q %v; want the credential", tok, err)
	}
	t.Setenv(client.EnvAddr, "http://10.0.0.1:9")
	t.Setenv(client.EnvToken, "from-env")
	if addr, tok, err := client.Target("", "", ""); addr != "http://10.0.0.1:9" || tok != "from-env" || err != nil {
		t.Errorf("Target from the environment: %q %q %v", addr, tok, err)
	}
	file := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(file, []byte("from-file-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if addr, tok, err := client.Target("127.0.0.1:2", "", file); addr != "127.0.0.1:2" || tok != "from-file-0123456789abcdef" || err != nil {
		t.Errorf("Target with --token-file: %q %q %v", addr, tok, err)
	}
	if _, _, err := client.Target("", "x", file); err == nil || !strings.Contains(err.Error(), "pass one or the other") {
		t.Errorf("Target with --token and --token-file: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(client.EnvToken, "")
	if _, _, err := client.Target("127.0.0.1:1", "", ""); !errors.Is(err, client.ErrUntrustedCredential) {
		t.Errorf("Target with a world-readable credential file: %v", err)
	}
}
