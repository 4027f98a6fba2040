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
	if _, err := st.(sb.ToolsetStore).CreateToolset(ctx, &sb.Toolset{Name: "coder",
		Tools: []sb.Selector{{Server: "alpha", Tool: "echo", As: "say"}, {Server: "beta", Tool: "add"}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	cmd := daemontest.Command(t, "stdio", "--db", db, "--toolset", "coder")
	cmd.Stderr = t.Output()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "local"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
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
