package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testserver.RemoveBinary(); os.Exit(code) }))
}

func startSession(t *testing.T, name string, args ...string) *upstream.Session {
	t.Helper()
	s := upstream.New(&sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: args},
		&upstream.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExecuteDispatchesByAddress(t *testing.T) {
	ex := executor.New(executor.NewMCP(executor.NewStatic(
		startSession(t, "alpha"),
		startSession(t, "beta", "-name", "beta-server"),
	)))
	var progress []sb.Progress
	res, err := ex.Execute(context.Background(), "beta/slow", map[string]any{"duration_ms": 300, "interval_ms": 100},
		sb.InvokeOptions{Timeout: 5 * time.Second, OnProgress: func(p sb.Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.MustDecode().Content[0].(*mcp.TextContent).Text != "done after 300ms" || len(progress) != 3 {
		t.Fatalf("result %+v, %d progress notifications", res.MustDecode().Content[0], len(progress))
	}
}

func TestExecuteRejectsBadAddresses(t *testing.T) {
	ex := executor.New(executor.NewMCP(executor.NewStatic(startSession(t, "github"))))
	for _, addr := range []string{"", "github", "/echo", "github/", " github/echo"} {
		if _, err := ex.Execute(context.Background(), addr, nil, sb.InvokeOptions{}); !errors.Is(err, executor.ErrBadAddress) {
			t.Errorf("%q: err = %v, want ErrBadAddress", addr, err)
		}
	}
	_, err := ex.Execute(context.Background(), "gihtub/echo", nil, sb.InvokeOptions{})
	var ae *executor.AddressError
	if !errors.As(err, &ae) || !errors.Is(err, executor.ErrUnknownServer) || !slices.Equal(ae.Suggestions, []string{"github"}) {
		t.Fatalf("err = %v, want an unknown server suggesting github", err)
	}
	if _, err := ex.Execute(context.Background(), "github/ech", nil, sb.InvokeOptions{}); !errors.Is(err, upstream.ErrUnknownTool) {
		t.Fatalf("err = %v, want ErrUnknownTool", err)
	}
}

func TestParseAddressKeepsSlashesInToolNames(t *testing.T) {
	server, tool, err := executor.ParseAddress("fs/dir/list")
	if err != nil || server != "fs" || tool != "dir/list" {
		t.Fatalf("ParseAddress = %q %q %v", server, tool, err)
	}
}

// finderPlugin serves the servers it is given, and counts how often it is
// asked to list them.
type finderPlugin struct {
	names  []string
	listed *int
}

func (f finderPlugin) Servers() []string         { *f.listed++; return f.names }
func (f finderPlugin) Serves(server string) bool { return slices.Contains(f.names, server) }
func (finderPlugin) Invoke(context.Context, string, string, any, sb.InvokeOptions) (*upstream.Result, error) {
	return &upstream.Result{Raw: json.RawMessage(`{"content":[]}`)}, nil
}

// A call is routed without listing every server (with a thousand servers
// that cost more than the call), to the first plugin that serves it; only
// an unknown server lists them, for the suggestions.
func TestExecuteFindsTheServerWithoutListingThem(t *testing.T) {
	listed := 0
	ex := executor.New(finderPlugin{names: []string{"github"}, listed: &listed}, silentPlugin{})
	if _, err := ex.Execute(context.Background(), "github/echo", nil, sb.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	if listed != 0 {
		t.Fatalf("Servers was called %d times for a call to a known server, want 0", listed)
	}
	if _, err := ex.Execute(context.Background(), "quiet/tool", nil, sb.InvokeOptions{}); sb.CodeOf(err) != sb.CodeInternal {
		t.Fatalf("a server of the second plugin: err = %v, want its call made (and its empty answer refused)", err)
	}
	_, err := ex.Execute(context.Background(), "githb/echo", nil, sb.InvokeOptions{})
	var ae *executor.AddressError
	if !errors.As(err, &ae) || !slices.Equal(ae.Suggestions, []string{"github"}) || listed != 1 {
		t.Fatalf("unknown server: err = %v, Servers called %d times; want github suggested from one listing", err, listed)
	}
}

// silentPlugin answers every call with neither a result nor an error.
type silentPlugin struct{}

func (silentPlugin) Serves(server string) bool { return server == "quiet" }
func (silentPlugin) Servers() []string         { return []string{"quiet"} }
func (silentPlugin) Invoke(context.Context, string, string, any, sb.InvokeOptions) (*upstream.Result, error) {
	return nil, nil
}

// No failure is ever reported as an empty success, even by a plugin that
// breaks its contract.
func TestExecuteNeverReturnsAnEmptySuccess(t *testing.T) {
	res, err := executor.New(silentPlugin{}).Execute(context.Background(), "quiet/tool", nil, sb.InvokeOptions{})
	if err == nil || res != nil || sb.CodeOf(err) != sb.CodeInternal {
		t.Fatalf("Execute = %v, %v; want an internal error", res, err)
	}
}
