package client

// This file is the daemon's credential as a file on disk: "switchboard
// serve", started without a token, generates one and keeps it where only
// the user who runs it can read it; the CLI (and any client of the same
// user) finds it there, so that neither needs configuring. A local user
// who is someone else finds nothing: loopback is not a trust boundary on
// a shared host, and the API runs commands as the daemon's user.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-mcp/switchboard/internal/fileowner"
)

// CredentialFile is where "switchboard serve" keeps the credential it
// generates, relative to the user's config directory (os.UserConfigDir:
// $XDG_CONFIG_HOME, else ~/.config, on Linux). The directory is created
// with mode 0700, the file with 0600.
const CredentialFile = "switchboard/token"

// maxCredential bounds what is read of a credential file: a token is a
// line, not a document.
const maxCredential = 4096

// ErrUntrustedCredential is returned (wrapped, with the path and the fix)
// when the credential file or its directory is not private to the user:
// readable or writable by its group or others, or owned by another user.
// Such a file may be known to, or replaced by, someone else.
var ErrUntrustedCredential = errors.New("credential file is not private")

// CredentialPath returns the path of this user's credential file: the
// config directory joined with CredentialFile.
func CredentialPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for the credential: %w", err)
	}
	return filepath.Join(dir, filepath.FromSlash(CredentialFile)), nil
}

// ReadCredential returns the token in the credential file at path, after
// checking that the file and its directory belong to this user and are
// not accessible to anyone else. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist).
func ReadCredential(path string) (string, error) {
	if err := fileowner.CheckPrivateDir(filepath.Dir(path)); err != nil {
		if errors.Is(err, fileowner.ErrNotPrivate) {
			return "", fmt.Errorf("%w: %w", ErrUntrustedCredential, err)
		}
		return "", err
	}
	return readToken(path, "the credential")
}

// ReadTokenFile returns the token in the file at path (one line; the
// file of --token-file), after checking that the file belongs to this
// user and that its group and others have no access to it (mode 0600 or
// stricter): a token others can read is known to them. Its directory is
// not checked: a service manager hands secrets over in a directory of its
// own. A refusal satisfies errors.Is(err, ErrUntrustedCredential).
func ReadTokenFile(path string) (string, error) { return readToken(path, "the token file") }

// readToken reads the token in the private file at path, which the
// errors name as what.
func readToken(path, what string) (string, error) {
	b, err := fileowner.ReadPrivate(path, maxCredential+1)
	if errors.Is(err, fileowner.ErrNotPrivate) {
		return "", fmt.Errorf("%w: %w", ErrUntrustedCredential, err)
	}
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if err := validToken(tok); err != nil {
		return "", fmt.Errorf("%s %s: %w", what, path, err)
	}
	return tok, nil
}

// LoadOrCreateCredential returns the token in the credential file at
// path, generating one (32 random bytes, hex) first if there is none:
// the directory is created with mode 0700, the file with 0600, whole or
// not at all, so that serve processes started together agree on one
// token. created says whether this call generated it. A file or directory
// that is not private is refused (ErrUntrustedCredential), never repaired:
// its token may be known to someone else.
func LoadOrCreateCredential(path string) (token string, created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("creating the credential's directory: %w", err)
	}
	tok, err := ReadCredential(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	b := make([]byte, 32)
	rand.Read(b)
	tok = hex.EncodeToString(b)
	// Written under a temporary name and linked into place: a reader
	// never sees half a token, and of two serve processes racing, the
	// second finds the first one's file.
	tmp, err := os.CreateTemp(dir, ".token-*") // mode 0600

	if err != nil {
		return "", false, fmt.Errorf("creating the credential: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(tok + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("writing the credential: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			tok, err := ReadCredential(path)
			return tok, false, err
		}
		return "", false, fmt.Errorf("writing the credential: %w", err)
	}
	return tok, true, nil
}

// CredentialFor returns the token a client of the daemon at addr should
// send when it was given none: this user's credential file's, if addr is
// a loopback address (127.0.0.0/8, [::1] or localhost) and the file
// exists. For another address it returns "": the file is the local
// daemon's, and sending it elsewhere would hand it to whoever answers
// there. A file that exists but is not private, or cannot be read, is an
// error.
func CredentialFor(addr string) (string, error) {
	base, err := normalizeAddr(addr)
	if err != nil || !isLoopbackURL(base) {
		return "", nil
	}
	path, err := CredentialPath()
	if err != nil {
		return "", nil // no config directory, so no file
	}
	tok, err := ReadCredential(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return tok, err
}

// isLoopbackURL reports whether the host of the URL u is a loopback name
// or address.
func isLoopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := p.Hostname()
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validToken checks that tok can be sent in an Authorization header: one
// line of visible ASCII.
func validToken(tok string) error {
	if tok == "" {
		return errors.New("it is empty")
	}
	if len(tok) > maxCredential {
		return fmt.Errorf("it is over %d bytes", maxCredential)
	}
	for _, c := range tok {
		if c <= ' ' || c > '~' {
			return errors.New("it holds a character other than visible ASCII (a token is one word)")
		}
	}
	return nil
}
