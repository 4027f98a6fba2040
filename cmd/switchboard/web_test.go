package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// TestWebPrintsALoginLinkThatWorksOnce: "switchboard web" gets a login link
// from serve with this user's credential (no flag), prints it, and the
// link logs a browser in once; without the credential there is no link.
func TestWebPrintsALoginLinkThatWorksOnce(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	link := strings.TrimSpace(d.ok(t, "web", "--no-open").stdout)
	if !strings.HasPrefix(link, d.addr+"/ui/login?code=") {
		t.Fatalf("link %q", link)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		resp, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("opening the link, time %d: %d, want %d", i+1, resp.StatusCode, want)
		}
		if i == 0 && (len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly) {
			t.Fatalf("cookies %v", resp.Cookies())
		}
	}
	d.fail(t, []string{"401"}, "web", "--no-open", "--token", "wrong")
}
