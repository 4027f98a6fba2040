// Package oauthkey keeps the OAuth key file: the key that seals the
// stored OAuth grants ([switchboard.OAuthKey]), 32 random bytes in a file
// private to the user that serve and stdio run as. The domain package
// holds the key and its sealing; this package holds the file.
package oauthkey

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/fileowner"
)

// Load reads the key file at path, creating it (0600, 32 random bytes,
// its directory 0700 if missing) if it does not exist. A key file that
// its group or others may read or write, or that another user owns, is
// refused: whoever reads it reads every stored token.
func Load(path string) (*sb.OAuthKey, error) {
	key, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = create(path)
	}
	if err != nil {
		return nil, err
	}
	return sb.NewOAuthKey(key)
}

// read reads the key file at path, refusing it unless it is private to
// this user (fileowner.ReadPrivate).
func read(path string) ([]byte, error) {
	key, err := fileowner.ReadPrivate(path, sb.OAuthKeySize+1)
	if errors.Is(err, fileowner.ErrNotPrivate) {
		return nil, fmt.Errorf("oauth key file is not private (it holds the key to every stored token): %w", err)
	}
	if err != nil {
		return nil, err
	}
	if len(key) != sb.OAuthKeySize {
		return nil, fmt.Errorf("oauth key file %s holds %d bytes, not %d: it is not a key Switchboard wrote", path, len(key), sb.OAuthKeySize)
	}
	return key, nil
}

// create writes a new random key to path, failing if a file appeared
// there meanwhile (another replica won: its key is read instead).
func create(path string) ([]byte, error) {
	key := make([]byte, sb.OAuthKeySize)
	rand.Read(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("oauth key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return read(path)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth key file: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("oauth key file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("oauth key file: %w", err)
	}
	return key, nil
}
