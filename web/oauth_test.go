package web_test

import (
	"context"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/oauthtest"
)

// TestServerIsAuthorizedFromThePage: a server that requires OAuth shows
// its phase auth and an Authorize button; the button opens the
// authorization server in a new window, which (approving at once) sends
// it back to the daemon, and the row turns connected.
func TestServerIsAuthorizedFromThePage(t *testing.T) {
	as := oauthtest.New(t)
	p := newLoggedInPage(t)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if _, err := p.api.CreateServer(ctx, &sb.ServerConfig{Name: "gh", Transport: sb.TransportStreamableHTTP,
		URL: as.URL + "/mcp", OAuth: &sb.OAuthConfig{}}); err != nil {
		t.Fatal(err)
	}
	p.waitJS("phase auth in the row", card("gh")+`.dataset.status === "error" && `+
		card("gh")+`.querySelector('[data-role="error"]').textContent.includes("auth")`)
	p.openServer("gh")
	p.waitJS("what to do in the detail view", detailOf("error")+`.textContent.includes("switchboard server auth gh")`)
	p.shot("authorization-required")
	p.click(`#nav button[data-view="servers"]`)
	p.rowAction("gh", "authorize")
	p.waitJS("connected after the approval", card("gh")+`.dataset.status === "connected"`)
	if n := len(as.Requested()); n != 1 {
		t.Fatalf("%d authorization requests, want 1", n)
	}
}
