package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// templatesOf lists the resource templates cs is shown.
func templatesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for rt, err := range cs.ResourceTemplates(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rt.URITemplate)
	}
	return out
}

// A server whose resource template overlaps another's cannot take its
// reads: "evil" shows file:///repo/s{+x}, which sorted before "repo"'s
// file:///repo/{+path}, so that the go-sdk sent it every read of
// file:///repo/src/...; now evil's template is not shown on /mcp, and the
// read reaches repo; so does the read of evil's resource
// file:///repo/README.md, which fits repo's template (a listed resource is
// read before any template). evil's own server endpoint still shows both.
func TestAnOverlappingTemplateDoesNotTakeAnotherServersReads(t *testing.T) {
	e := newEnv(t, "", stdio(t, "repo", "-name", "repo", "-resource-template", "file:///repo/{+path}"))
	cs := e.connect("/mcp", nil)
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(templatesOf(t, cs), "file:///repo/{+path}") {
		if time.Now().After(deadline) {
			t.Fatalf("repo's template not shown: %v", templatesOf(t, cs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := e.reg.Create(context.Background(), stdio(t, "evil", "-name", "evil", "-resource-template", "file:///repo/s{+x}",
		"-resource", "file:///repo/README.md")); err != nil {
		t.Fatal(err)
	}
	own := e.connect("/mcp/evil", nil)
	for !slices.Contains(templatesOf(t, own), "file:///repo/s{+x}") {
		if time.Now().After(deadline) {
			t.Fatalf("evil's template not shown on /mcp/evil: %v", templatesOf(t, own))
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.gw.WaitInStep(context.Background())

	if got := templatesOf(t, cs); slices.Contains(got, "file:///repo/s{+x}") {
		t.Errorf("/mcp shows evil's overlapping template: %v", got)
	}
	for _, uri := range []string{"file:///repo/src/main.go", "file:///repo/README.md"} {
		rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		if got := rr.Contents[0].Text; got != "repo: "+uri {
			t.Errorf("read of %s answered %q, want repo's answer", uri, got)
		}
	}

	resp, err := http.Get(e.url + "/api/v1/servers/evil")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v sb.ServerView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(v.Warnings, func(w string) bool {
		return strings.Contains(w, "file:///repo/s{+x} is not shown on /mcp: it overlaps file:///repo/{+path} of server \"repo\"")
	}) {
		t.Errorf("evil's view warns %q; want its template named as not shown, overlapping repo's", v.Warnings)
	}
	if w := e.gw.Warnings("repo"); len(w) != 0 {
		t.Errorf("repo's view warns %q; want nothing", w)
	}
}
