package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
)

// browse plays the person's browser: it opens the authorization URL,
// which the test authorization server approves at once, and follows its
// redirect to the daemon's callback, whose page it returns.
func browse(t *testing.T, authURL string) string {
	t.Helper()
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/oauth/callback") {
		t.Fatalf("the browser ended at %s with %d: %s", resp.Request.URL, resp.StatusCode, page)
	}
	return string(page)
}

// waitServer polls the daemon until the server's runtime satisfies pred.
func waitServer(t *testing.T, c *client.Client, name, what string, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
	t.Helper()
	var last sb.RuntimeInfo
	for range 200 {
		v, err := c.Server(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if last = v.Runtime; pred(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: last runtime %+v, error %+v", what, last, last.Error)
	return last
}

func authRequired(i sb.RuntimeInfo) bool {
	return i.Status == sb.StatusError && i.Error != nil && i.Error.Phase == sb.PhaseAuth && i.Error.Code == sb.CodeAuthorizationRequired
}

func connected(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected }

// TestServerAuthEndToEnd authorizes a server that requires OAuth through a
// real daemon, its CLI and a real authorization server, and uses it through
// /mcp across refresh, rotation, revocation and step-up.
func TestServerAuthEndToEnd(t *testing.T) {
	as := oauthtest.New(t)
	d := startServe(t, daemontest.Options{})
	c := d.serve.Client(nil)
	ctx := context.Background()
	if r := d.run(t, nil, "", "server", "add", "gh", "--url", as.URL+"/mcp", "--transport", "streamable-http", "--oauth"); r.code != 0 {
		t.Fatalf("server add --oauth: %s", r)
	}
	info := waitServer(t, c, "gh", "phase auth", authRequired)
	if !strings.Contains(info.Error.Message, "switchboard server auth gh") {
		t.Fatalf("the error does not say what to run: %q", info.Error.Message)
	}
	if n := as.MCPRequests(); n != 0 {
		t.Fatalf("%d requests reached the server before any authorization", n)
	}

	// A machine-to-machine server needs no person; its secret is masked.
	as.AddMachineClient("robot", "robot-secret-42")
	if r := d.run(t, nil, "", "server", "add", "m2m", "--url", as.URL+"/mcp", "--oauth-grant", "client_credentials",
		"--oauth-client-id", "robot", "--oauth-client-secret", "robot-secret-42"); r.code != 0 {
		t.Fatalf("server add m2m: %s", r)
	}
	waitServer(t, c, "m2m", "connected", connected)
	if r := d.run(t, nil, "", "server", "show", "m2m"); !strings.Contains(r.stdout, "grant client_credentials, client_id robot, client_secret ***") ||
		strings.Contains(r.stdout, "robot-secret-42") {
		t.Fatalf("server show m2m: %s", r)
	}

	// Login with the CLI: it prints the URL and waits for the approval.
	cmd := exec.Command(daemontest.Binary(t), "server", "auth", "gh")
	cmd.Env = daemontest.Environ("SWITCHBOARD_ADDR="+d.addr, "XDG_CONFIG_HOME="+d.configDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), as.URL+"/authorize?") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("server auth printed %q first (stderr %q), want the authorization URL", lines.Text(), stderr.String())
	}
	if page := browse(t, lines.Text()); !strings.Contains(page, "gh is authorized") {
		t.Fatalf("callback page: %s", page)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "gh is authorized") {
		t.Fatalf("server auth: %v, stdout %q, stderr %q", err, rest, stderr.String())
	}
	waitServer(t, c, "gh", "connected", connected)

	// Through /mcp.
	mc := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil)
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.serve.MCPURL,
		HTTPClient: &http.Client{Transport: d.serve.Transport(http.DefaultTransport)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gh__echo", Arguments: map[string]any{"text": "hi"}})
		if err == nil && res.IsError {
			return &toolError{res}
		}
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}

	// Refresh after the server dropped the access token, then before
	// expiry with the rotated refresh token (the first one is dead).
	as.ExpireAccessTokens()
	as.SetTTL(30 * time.Second) // within the refresh margin: the next use refreshes
	for range 2 {
		if err := call(); err != nil {
			t.Fatalf("call across a refresh: %v", err)
		}
	}
	if n := as.Refreshes(); n != 2 {
		t.Fatalf("%d refreshes, want 2", n)
	}
	as.SetTTL(time.Hour)

	// Revocation: back to phase auth, not a loop.
	as.Revoke()
	if err := call(); err == nil {
		t.Fatal("a call with revoked tokens succeeded")
	}
	c.RestartServer(ctx, "gh")
	info = waitServer(t, c, "gh", "phase auth after revocation", authRequired)
	if !strings.Contains(info.Error.Message, "refused the refresh token") {
		t.Fatalf("after revocation: %q", info.Error.Message)
	}

	// Step-up, through the API as the web page does it.
	authorizeAPI := func() {
		start, err := c.StartAuth(ctx, "gh")
		if err != nil {
			t.Fatal(err)
		}
		browse(t, start.AuthorizationURL)
		waitServer(t, c, "gh", "connected", connected)
	}
	authorizeAPI()
	if err := call(); err != nil {
		t.Fatal(err)
	}
	as.RequireScopes("read", "write")
	if err := call(); err == nil {
		t.Fatal("a call without the required scope succeeded")
	}
	st, err := c.AuthStatus(ctx, "gh")
	if err != nil || !slices.Contains(st.StepUp, "write") {
		t.Fatalf("auth status after a 403: %+v, %v", st, err)
	}
	authorizeAPI()
	req := as.Requested()
	if last := req[len(req)-1]; !slices.Contains(last, "write") {
		t.Fatalf("the authorization after the 403 asked for %v", last)
	}
	if err := call(); err != nil {
		t.Fatalf("call after step-up: %v", err)
	}
}

type toolError struct{ res *mcp.CallToolResult }

func (e *toolError) Error() string {
	if len(e.res.Content) > 0 {
		if tc, ok := e.res.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return "tool error"
}
