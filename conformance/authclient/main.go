// Command authclient is Switchboard's client for the MCP conformance
// suite's client auth/* scenarios: the suite runs it with the URL of a
// server that requires OAuth, and it connects through Switchboard's own
// upstream session (package upstream), OAuth and all, then lists the tools
// and calls test-tool, as a daemon's session would.
//
// The suite's authorization server approves at once, so the authorization
// is in band (oauthclient.Client.Fetcher): the "browser" is an HTTP GET whose
// redirect carries the code. Grants are kept in a throwaway SQLite store,
// sealed like the daemon's.
//
//	authclient URL    (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT from the suite)
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// redirectURL is where the suite's authorization server sends the code;
// nothing listens there: the redirect is read, not followed.
const redirectURL = "http://localhost:3000/callback"

// clientMetadataURL is the Client ID Metadata Document the suite serves
// for scenarios that test that registration.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: authclient URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintf(os.Stderr, "authclient %s: %v\n", os.Getenv("MCP_CONFORMANCE_SCENARIO"), err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL, scenario, rawContext string) error {
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &cc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "authclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "sb.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	key := make([]byte, 32)
	rand.Read(key)
	k, err := sb.NewOAuthKey(key)
	if err != nil {
		return err
	}
	o := &oauthclient.Client{Store: st, Key: k, Fetcher: fetchCode, RedirectURL: redirectURL}
	oc := &sb.OAuthConfig{ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, ClientMetadataURL: clientMetadataURL}
	if strings.HasPrefix(scenario, "auth/client-credentials-") {
		// A machine-to-machine server: what its config would say.
		oc = &sb.OAuthConfig{Grant: sb.GrantClientCredentials, ClientID: cc.ClientID, ClientSecret: cc.ClientSecret}
	}
	cfg := &sb.ServerConfig{Name: "conformance", Transport: sb.TransportStreamableHTTP, URL: serverURL, OAuth: oc}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := upstream.New(cfg, &upstream.Options{OAuth: o, Logger: log, HealthInterval: -1})
	defer s.Shutdown(context.Background())
	if err := s.Start(ctx); err != nil {
		return err
	}
	cs, err := s.Client(ctx)
	if err != nil {
		return err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}})
	if err != nil {
		return fmt.Errorf("calling test-tool: %w", err)
	}
	if res.IsError {
		return errors.New("test-tool failed")
	}
	return nil
}

// fetchCode plays the browser: the suite's authorization server answers
// the authorization URL with a redirect carrying the code.
func fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return nil, fmt.Errorf("the authorization server answered %d without a code (Location %q)", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
