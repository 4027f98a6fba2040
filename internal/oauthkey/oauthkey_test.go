package oauthkey

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

// TestOAuthKeyFile: the key file is made (0600, 32 bytes, its directory
// too) and read back on a restart; one its group may read, or another
// user owns, is refused with the command that fixes it.
func TestOAuthKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "oauth.key")
	k1, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != sb.OAuthKeySize {
		t.Fatalf("key file: %v, %v; want 0600 and %d bytes", fi.Mode(), err, sb.OAuthKeySize)
	}
	sealed := k1.Seal("gh", []byte("token"))
	if bytes.Contains(sealed, []byte("token")) {
		t.Fatal("sealed grant holds the plaintext")
	}
	k2, err := Load(path) // a restart reads the same key
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Open("gh", sealed); err != nil || string(got) != "token" {
		t.Fatalf("open after reload = %q, %v", got, err)
	}
	if _, err := k2.Open("other", sealed); !errors.Is(err, sb.ErrOAuthSeal) {
		t.Fatalf("a grant moved to another server opened: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "mode 0640") || !strings.Contains(err.Error(), "chmod 600 "+path) {
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
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") || !strings.Contains(err.Error(), "chown 0 ") {
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
	k, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := Load(link)
	if err != nil {
		t.Fatalf("a symlink to the key file: %v", err)
	}
	if got, err := viaLink.Open("gh", k.Seal("gh", []byte("token"))); err != nil || string(got) != "token" {
		t.Fatalf("the key read through a symlink opens %q, %v; want the same key", got, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err == nil || !strings.Contains(err.Error(), "mode 0644") || !strings.Contains(err.Error(), "chmod 600 "+link) {
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
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+" is not a regular file") {
			t.Errorf("Load(%s): %v, want a refusal saying it is not a regular file", p, err)
		}
	}
}
