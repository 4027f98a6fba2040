package oauthclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file is the client credentials grant, for machine-to-machine
// servers: Switchboard gets its tokens itself with the configured client
// id and secret, whenever it has none or they expire. No person, no refresh
// token.

// clientCredentials discovers cfg's authorization server and gets a token
// with the client credentials grant; the grant is stored. ts's turn is held.
func (ts *tokenSource) clientCredentials(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (string, error) {
	prm, asm, scopes, err := discover(ctx, cfg, hc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAuthorizationFailed, err)
	}
	scopes = requestScopes(cfg.OAuth, scopes, nil)
	cc := &clientcredentials.Config{ClientID: cfg.OAuth.ClientID, ClientSecret: cfg.OAuth.ClientSecret,
		TokenURL: asm.TokenEndpoint, Scopes: scopes, AuthStyle: secretStyle(asm.TokenEndpointAuthMethodsSupported),
		EndpointParams: url.Values{"resource": {prm.Resource}}}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		return "", fmt.Errorf("%w: the client credentials grant at %s: %w", ErrAuthorizationFailed, asm.TokenEndpoint, err)
	}
	g := &sb.OAuthGrant{Resource: cfg.URL, ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, TokenURL: cc.TokenURL,
		AuthStyle: int(cc.AuthStyle), Scopes: grantedScopes(tok, scopes), AccessToken: tok.AccessToken,
		TokenType: tok.TokenType, Expiry: tok.Expiry}
	if err := ts.overwrite(ctx, g); err != nil {
		return "", err
	}
	return g.AccessToken, nil
}

// discover finds cfg's protected resource metadata and its authorization
// server's metadata, as the MCP authorization spec says: the
// resource_metadata of the server's 401, else the well-known URLs at the
// endpoint's path and at the root, else the 2025-03-26 fallbacks (the
// server's origin as its authorization server, at the default endpoints);
// and the scopes the 401 names.
func discover(ctx context.Context, cfg *sb.ServerConfig, hc *http.Client) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, []string, error) {
	resp, err := challenge(ctx, cfg, hc)
	if err != nil {
		return nil, nil, nil, err
	}
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	root := *u
	root.Path, root.RawQuery = "/.well-known/oauth-protected-resource", ""
	atPath := root
	atPath.Path += "/" + strings.TrimLeft(u.Path, "/")
	var prm *oauthex.ProtectedResourceMetadata
	for _, m := range slices.DeleteFunc([]string{bearerParam(cs, "resource_metadata"), atPath.String(), root.String()},
		func(s string) bool { return s == "" }) {
		resource := cfg.URL
		if m == root.String() {
			resource = u.Scheme + "://" + u.Host
		}
		if prm, err = oauthex.GetProtectedResourceMetadata(ctx, m, resource, hc); err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			break
		}
		prm = nil
	}
	if prm == nil {
		// The 2025-03-26 spec: the server's origin is its authorization server.
		prm = &oauthex.ProtectedResourceMetadata{Resource: cfg.URL, AuthorizationServers: []string{u.Scheme + "://" + u.Host}}
	}
	as := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, as, hc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		// The 2025-03-26 spec's default endpoints.
		asm = &oauthex.AuthServerMeta{Issuer: as, AuthorizationEndpoint: as + "/authorize", TokenEndpoint: as + "/token",
			RegistrationEndpoint: as + "/register"}
	}
	scopes := strings.Fields(bearerParam(cs, "scope"))
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	return prm, asm, scopes, nil
}

// secretStyle picks how to send the client secret to the token endpoint:
// HTTP Basic (RFC 6749's default) where supported, else in the form.
func secretStyle(supported []string) oauth2.AuthStyle {
	switch {
	case len(supported) == 0, slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}
