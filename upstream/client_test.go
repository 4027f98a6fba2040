package upstream_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// TestSharedClientRoutesNotificationsToTheirSession: the sessions share one
// go-sdk client; a list_changed of one server refreshes that server's
// session, however many others connected after it.
func TestSharedClientRoutesNotificationsToTheirSession(t *testing.T) {
	a := inProcess(t, testserver.Options{})
	b := inProcess(t, testserver.Options{})
	cs, err := a.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "brand_new"}}); err != nil {
		t.Fatal(err)
	}
	has := func(tools []*mcp.Tool) bool {
		return slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == "brand_new" })
	}
	for i := 0; !has(a.Tools()); i++ {
		if i == 500 {
			t.Fatal("the session whose server changed its tools did not refresh them")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if has(b.Tools()) {
		t.Error("the other session lists the new tool")
	}
}
