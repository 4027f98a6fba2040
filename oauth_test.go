package switchboard

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestOAuthKeySeals: a grant sealed for one server opens with the same key
// for that server only, and never holds the plaintext; a key of the wrong
// length is refused. (The key's file: internal/oauthkey.)
func TestOAuthKeySeals(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, OAuthKeySize)
	k1, err := NewOAuthKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := NewOAuthKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	sealed := k1.Seal("gh", []byte("token"))
	if bytes.Contains(sealed, []byte("token")) {
		t.Fatal("sealed grant holds the plaintext")
	}
	if got, err := k2.Open("gh", sealed); err != nil || string(got) != "token" {
		t.Fatalf("open with the same key = %q, %v", got, err)
	}
	if _, err := k2.Open("other", sealed); !errors.Is(err, ErrOAuthSeal) {
		t.Fatalf("a grant moved to another server opened: %v", err)
	}
	other, _ := NewOAuthKey(bytes.Repeat([]byte{8}, OAuthKeySize))
	if _, err := other.Open("gh", sealed); !errors.Is(err, ErrOAuthSeal) {
		t.Fatalf("a grant opened with another key: %v", err)
	}
	if _, err := NewOAuthKey(raw[:16]); err == nil {
		t.Fatal("a 16-byte key was accepted")
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

// Derive gives every holder of one key the same key for a purpose, and
// keys apart from it for another purpose or another key.
func TestOAuthKeyDerive(t *testing.T) {
	raw := bytes.Repeat([]byte{1}, OAuthKeySize)
	k1, err := NewOAuthKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := NewOAuthKey(bytes.Clone(raw))
	k3, _ := NewOAuthKey(bytes.Repeat([]byte{2}, OAuthKeySize))
	a := k1.Derive("task ids")
	if len(a) != 32 || !bytes.Equal(a, k2.Derive("task ids")) {
		t.Errorf("one key derives %x and %x; want the same 32 bytes", a, k2.Derive("task ids"))
	}
	for what, other := range map[string][]byte{"another purpose": k1.Derive("other"), "another key": k3.Derive("task ids"), "the key itself": raw} {
		if bytes.Equal(a, other) {
			t.Errorf("the derived key equals %s's", what)
		}
	}
}
