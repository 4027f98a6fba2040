package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// server edit takes every flag server add takes: --no-sandbox (and
// --no-sandbox=false) on a stdio server, --oauth and each --oauth-* on a
// remote one, as the daemon's own 401 advice ("server edit NAME --oauth")
// tells a user to run. On the old code each said "nothing to change".
func TestServerEditTakesEveryFlagOfAdd(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	d.ok(t, "server", "add", "local", "--command", "/bin/true", "--disabled")
	d.ok(t, "server", "add", "docs", "--url", "http://127.0.0.1:1/mcp", "--disabled")

	d.ok(t, "server", "edit", "local", "--no-sandbox")
	if v := d.view(t, "local"); v.Sandbox == nil || v.Sandbox.Enabled == nil || *v.Sandbox.Enabled {
		t.Errorf("after edit --no-sandbox: sandbox %+v, want enabled false", v.Sandbox)
	}
	d.ok(t, "server", "edit", "local", "--no-sandbox=false")
	if v := d.view(t, "local"); v.Sandbox != nil && v.Sandbox.Enabled != nil {
		t.Errorf("after edit --no-sandbox=false: sandbox enabled %v, want the default", *v.Sandbox.Enabled)
	}
	d.fail(t, []string{"--no-sandbox turns off"}, "server", "edit", "local", "--no-sandbox", "--mount", "/tmp")
	d.fail(t, []string{"--oauth and --oauth-* are for --url servers"}, "server", "edit", "local", "--oauth")

	d.ok(t, "server", "edit", "docs", "--oauth")
	if v := d.view(t, "docs"); v.OAuth == nil {
		t.Fatalf("after edit --oauth: no oauth block")
	}
	d.ok(t, "server", "edit", "docs", "--oauth-grant", "client_credentials", "--oauth-client-id", "sb",
		"--oauth-client-secret", "s3cret", "--oauth-scope", "read", "--oauth-scope", "write")
	v := d.view(t, "docs")
	if o := v.OAuth; o == nil || o.Grant != "client_credentials" || o.ClientID != "sb" || o.ClientSecret == "" ||
		!slices.Equal(o.Scopes, []string{"read", "write"}) {
		t.Errorf("after edit --oauth-*: oauth %+v", v.OAuth)
	}
	d.fail(t, []string{"--no-sandbox is for stdio servers"}, "server", "edit", "docs", "--no-sandbox")
}

// A mistyped verb of a group gets the nearest verb, a transposition
// included ("lsit" is one edit from "list"); on the old code only the
// root's verbs had suggestions.
func TestMistypedVerbGetsDidYouMean(t *testing.T) {
	d := &target{addr: "http://127.0.0.1:1"} // no daemon: the verbs fail before reaching one
	for _, c := range []struct{ args []string }{
		{[]string{"server", "lsit"}},
		{[]string{"toolset", "lst"}},
		{[]string{"token", "revok"}},
	} {
		want := map[string]string{"lsit": `did you mean "list"?`, "lst": `did you mean "list"?`, "revok": `did you mean "revoke"?`}[c.args[1]]
		d.fail(t, []string{"unknown command", want}, c.args...)
	}
}

// Refusals of the server verbs say what to do in the CLI's words: an
// unknown server points at "switchboard server list" (on the old code, at
// GET /api/v1/servers), and a name that breaks the rule gets the nearest
// valid one (on the old code, a regular expression).
func TestServerRefusalsSayWhatToDo(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	d.fail(t, []string{`no server named "nosuch"`, `"switchboard server list" lists them`}, "server", "rm", "nosuch")
	r := d.fail(t, []string{`try "github"`}, "server", "add", "GitHub", "--url", "http://127.0.0.1:1/mcp", "--disabled")
	if strings.Contains(r.stderr, "^[a-z") {
		t.Errorf("server add GitHub shows a regular expression: %s", r)
	}
}
