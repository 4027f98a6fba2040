package switchboard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOAuthKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "oauth.key")
	k1, err := LoadOAuthKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != oauthKeySize {
		t.Fatalf("key file: %v, %v; want 0600 and %d bytes", fi.Mode(), err, oauthKeySize)
	}
	sealed := k1.Seal("gh", []byte("token"))
	if bytes.Contains(sealed, []byte("token")) {
		t.Fatal("sealed grant holds the plaintext")
	}
	k2, err := LoadOAuthKey(path) // a restart reads the same key
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Open("gh", sealed); err != nil || string(got) != "token" {
		t.Fatalf("open after reload = %q, %v", got, err)
	}
	if _, err := k2.Open("other", sealed); !errors.Is(err, ErrOAuthSeal) {
		t.Fatalf("a grant moved to another server opened: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOAuthKey(path); err == nil || !strings.Contains(err.Error(), "mode 0640") || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("group-readable key file: %v, want a refusal naming its mode and chmod 600 %s", err, path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	// Another user's key file: that user could read or replace the key.
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	if err := os.Chown(path, 4242, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOAuthKey(path); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") || !strings.Contains(err.Error(), "chown 0 ") {
		t.Fatalf("a key file of another user: %v, want a refusal naming its owner and chown", err)
	}
}

// TestOAuthKeyFileKinds: a symlink to the key file is followed (its
// target is what is checked and read, as before); a symlink to a key that
// others may read is refused; a FIFO or a directory at the path is
// refused, the FIFO without waiting for a writer.
func TestOAuthKeyFileKinds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "oauth.key")
	k, err := LoadOAuthKey(path)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := LoadOAuthKey(link)
	if err != nil {
		t.Fatalf("a symlink to the key file: %v", err)
	}
	if got, err := viaLink.Open("gh", k.Seal("gh", []byte("token"))); err != nil || string(got) != "token" {
		t.Fatalf("the key read through a symlink opens %q, %v; want the same key", got, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOAuthKey(link); err == nil || !strings.Contains(err.Error(), "mode 0644") || !strings.Contains(err.Error(), "chmod 600 "+link) {
		t.Fatalf("a symlink to a world-readable key: %v, want a refusal naming chmod 600", err)
	}

	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.key")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, sub} {
		if _, err := LoadOAuthKey(p); err == nil || !strings.Contains(err.Error(), p+" is not a regular file") {
			t.Errorf("LoadOAuthKey(%s): %v, want a refusal saying it is not a regular file", p, err)
		}
	}
}

func TestOAuthConfigValidateAndMask(t *testing.T) {
	cfg := &ServerConfig{Name: "gh", Transport: TransportRemote, URL: "https://mcp.example.com/mcp",
		OAuth: &OAuthConfig{ClientID: "app", ClientSecret: "s3cr3t-value", Scopes: []string{"repo"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := cfg.Masked()
	if m.OAuth.ClientSecret != SecretMask || cfg.OAuth.ClientSecret != "s3cr3t-value" {
		t.Fatalf("masked secret %q (original %q)", m.OAuth.ClientSecret, cfg.OAuth.ClientSecret)
	}
	back, err := m.Unmask(cfg)
	if err != nil || back.OAuth.ClientSecret != "s3cr3t-value" {
		t.Fatalf("unmask = %+v, %v", back.OAuth, err)
	}
	if _, err := m.Unmask(nil); err == nil {
		t.Fatal("a masked secret with nothing stored was accepted")
	}
	if got := NewRedactor(cfg).String("failed with s3cr3t-value"); strings.Contains(got, "s3cr3t") {
		t.Fatalf("redactor kept the client secret: %q", got)
	}
	for _, bad := range []*ServerConfig{
		{Name: "a", Transport: TransportStdio, Command: "x", OAuth: &OAuthConfig{}},
		{Name: "a", Transport: TransportRemote, URL: "https://h/mcp", OAuth: &OAuthConfig{Grant: "password"}},
		{Name: "a", Transport: TransportRemote, URL: "https://h/mcp", OAuth: &OAuthConfig{Grant: GrantClientCredentials, ClientID: "x"}},
		{Name: "a", Transport: TransportRemote, URL: "https://h/mcp", OAuth: &OAuthConfig{Scopes: []string{"a b"}}},
		{Name: "a", Transport: TransportRemote, URL: "https://h/mcp", OAuth: &OAuthConfig{ClientMetadataURL: "http://h/client.json"}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v accepted", bad.OAuth)
		}
	}
}
