package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// listMethods are the four lists a mirror serves.
var listMethods = []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"}

// The lists a 2026-07-28 client is served carry the upstreams' own cache
// hints: on /mcp/NAME that server's (private, 60 s; public, 30 s), on /mcp
// private because one contributing server said so, with the shorter ttlMs.
// A 2025-11-25 client is sent the same members: the go-sdk's server sends
// them to either generation (they are extra members to 2025-11-25).
func TestListsCarryTheUpstreamsCacheHints(t *testing.T) {
	priv := testserver.StartHTTP(t, "-name", "priv", "-stateless", "-private-cache")
	pub := testserver.StartHTTP(t, "-name", "pub", "-stateless", "-cache-ttl", "30000",
		"-resource", "test://pub", "-resource-template", "pub://{x}")
	e := newEnv(t, "",
		&sb.ServerConfig{Name: "priv", Transport: sb.TransportStreamableHTTP, URL: priv.URL, ProtocolVersion: "2026-07-28"},
		&sb.ServerConfig{Name: "pub", Transport: sb.TransportStreamableHTTP, URL: pub.URL, ProtocolVersion: "2026-07-28"})
	old := e.connect("/mcp", nil)
	waitTools(t, old, "priv__echo", "pub__echo")
	want := map[string]mcp.Cacheable{
		"/mcp/priv": {TTLMs: 60000, CacheScope: "private"},
		"/mcp/pub":  {TTLMs: 30000, CacheScope: "public"},
		"/mcp":      {TTLMs: 30000, CacheScope: "private"},
	}
	for path, w := range want {
		for _, method := range listMethods {
			a := send(t, newRequest(t, e.url+path, method, "", `{}`, plainCaps))
			var got mcp.Cacheable
			if err := json.Unmarshal([]byte(a.result), &got); err != nil || a.status != http.StatusOK || got != w {
				t.Errorf("%s %s: HTTP %d, result %.300s, error %s; want ttlMs %d, cacheScope %s",
					path, method, a.status, a.result, a.err, w.TTLMs, w.CacheScope)
			}
		}
	}

	ctx := context.Background()
	w := want["/mcp"]
	tools, err := old.ListTools(ctx, nil)
	if err != nil || tools.Cacheable != w {
		t.Errorf("2025-11-25 tools/list: %+v, %v; want %+v", tools.Cacheable, err, w)
	}
	resources, err := old.ListResources(ctx, nil)
	if err != nil || resources.Cacheable != w {
		t.Errorf("2025-11-25 resources/list: %+v, %v; want %+v", resources.Cacheable, err, w)
	}
	templates, err := old.ListResourceTemplates(ctx, nil)
	if err != nil || templates.Cacheable != w {
		t.Errorf("2025-11-25 resources/templates/list: %+v, %v; want %+v", templates.Cacheable, err, w)
	}
	prompts, err := old.ListPrompts(ctx, nil)
	if err != nil || prompts.Cacheable != w {
		t.Errorf("2025-11-25 prompts/list: %+v, %v; want %+v", prompts.Cacheable, err, w)
	}
}
