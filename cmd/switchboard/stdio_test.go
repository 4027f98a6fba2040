package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/store"
)

// A client that starts "switchboard stdio" and lists the tools at once, as
// one-shot clients (mcp-inspector --cli) and clients that ignore
// list_changed do, sees every server that starts within --ready-timeout.
func TestStdioFirstListShowsServersStillStarting(t *testing.T) {
	const n = 5
	db := "sqlite:" + filepath.Join(t.TempDir(), "sb.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var every []string
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		cfg := &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t),
			Args: []string{"-startup-delay", "1s"}, ProtocolVersion: "2025-11-25"}
		if _, err := st.Create(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		every = append(every, name+"__echo")
	}
	st.Close()

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default wait", nil, every},
		{"no wait", []string{"--ready-timeout", "0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := daemontest.Command(t, append([]string{"stdio", "--db", db}, tc.args...)...)
			cmd.Stderr = t.Output()
			start := time.Now()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "one-shot"}, nil).Connect(context.Background(),
				&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var names []string
			for tool, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			t.Logf("switchboard stdio start to the first tools/list answer, %d servers starting in 1 s: %v",
				n, time.Since(start).Round(time.Millisecond))
			for _, w := range tc.want {
				if !slices.Contains(names, w) {
					t.Fatalf("first tools/list = %v, want %v", names, tc.want)
				}
			}
			if tc.want == nil && len(names) != 0 {
				t.Fatalf("first tools/list = %v, want none yet", names)
			}
		})
	}
}

func TestStdioRejectsBadTimeouts(t *testing.T) {
	for _, args := range [][]string{
		{"--ready-timeout", "-1s"},
		{"--max-total-timeout", "-1s"},
		{"--max-total-timeout", "25h"},
	} {
		cmd := daemontest.Command(t, append([]string{"stdio", "--db", "sqlite:" + filepath.Join(t.TempDir(), "sb.db")}, args...)...)
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(string(out), args[0]) {
			t.Errorf("stdio %v: %v, %s; want an error naming the flag", args, err, out)
		}
	}
}
