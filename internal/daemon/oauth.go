package daemon

import (
	"fmt"
	"path/filepath"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/oauthkey"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// NewOAuth returns the daemon's OAuth client over st, sealing with the key
// in keyFile; by default the key file is oauth.key next to a SQLite
// database, or next to the credential file for PostgreSQL (every replica
// needs a copy of the same file).
func NewOAuth(st sb.Store, keyFile string, opts *upstream.Options) (*oauthclient.Client, error) {
	ost, ok := st.(sb.OAuthStore)
	if !ok {
		return nil, nil
	}
	if keyFile == "" {
		dir := ""
		if p, ok := st.(interface{ Path() string }); ok {
			dir = filepath.Dir(p.Path())
		} else if cred, err := client.CredentialPath(); err == nil {
			dir = filepath.Dir(cred)
		} else {
			return nil, fmt.Errorf("no place for the OAuth key file (%v): give --oauth-key-file", err)
		}
		keyFile = filepath.Join(dir, "oauth.key")
	}
	key, err := oauthkey.Load(keyFile)
	if err != nil {
		return nil, err
	}
	return &oauthclient.Client{Store: ost, Key: key, Egress: opts.Egress}, nil
}
