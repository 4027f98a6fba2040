package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/store"
)

// "switchboard stdio --toolset NAME" serves only the toolset, to the local
// user, without a token; an unknown toolset is an error that says what to
// do.
func TestStdioServesAToolset(t *testing.T) {
	ctx := context.Background()
	cs, db := stdioToolset(t, &sb.Toolset{Name: "coder",
		Tools: []sb.Selector{{Server: "alpha", Tool: "echo", As: "say"}, {Server: "beta", Tool: "add"}}})
	names := toolNamesOf(t, cs)
	if !slices.Equal(names, []string{"beta__add", "say"}) {
		t.Fatalf("tools %v, want exactly [beta__add say]", names)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("called the hidden alpha__echo")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("say: %+v, %v", res, err)
	}

	out, err := daemontest.Command(t, "stdio", "--db", db, "--toolset", "nope").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `no toolset named "nope"`) {
		t.Errorf("an unknown toolset: %v, %s", err, out)
	}
}

// stdioToolset stores servers alpha and beta (the testserver, 2025-11-25)
// and ts in a new SQLite database, and connects a go-sdk client to
// "switchboard stdio --toolset" of ts on it; closed when the test ends.
// It returns the client and the database.
func stdioToolset(t *testing.T, ts *sb.Toolset) (*mcp.ClientSession, string) {
	t.Helper()
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "sb.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := st.Create(ctx, &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t),
			ProtocolVersion: "2025-11-25"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.(sb.ToolsetStore).CreateToolset(ctx, ts); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cmd := daemontest.Command(t, "stdio", "--db", db, "--toolset", ts.Name)
	cmd.Stderr = t.Output()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "local"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, db
}

// toolNamesOf lists cs's tools (every page), sorted.
func toolNamesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}
