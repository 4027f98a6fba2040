package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

func TestLogBufferKeepsTheLastLines(t *testing.T) {
	b := NewLogBuffer(3)
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(b, "line %d\n", i)
	}
	if got, want := b.Lines(), []string{"line 3", "line 4", "line 5"}; !slices.Equal(got, want) {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	if got := b.Tail(1); !slices.Equal(got, []string{"line 5"}) {
		t.Fatalf("Tail(1) = %q", got)
	}
}

func TestLogBufferJoinsPartialWritesAndCutsLongLines(t *testing.T) {
	b := NewLogBuffer(10)
	b.Write([]byte("hel"))
	b.Write([]byte("lo\r\nwor"))
	b.Write([]byte(strings.Repeat("x", 3*maxLogLineBytes)))
	b.Write([]byte("\nlast"))
	b.Flush()
	got := b.Lines()
	if len(got) != 3 || got[0] != "hello" || got[2] != "last" {
		t.Fatalf("Lines = %q", got)
	}
	if !strings.HasSuffix(got[1], truncatedLineMark) || len(got[1]) != maxLogLineBytes+len(truncatedLineMark) {
		t.Fatalf("long line kept %d bytes, want it cut to %d plus a mark", len(got[1]), maxLogLineBytes)
	}
}

func TestMergeEnvKeepsOnlyTheBaseAndTheConfig(t *testing.T) {
	host := map[string]string{"PATH": "/usr/bin", "HOME": "/root", "SWITCHBOARD_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k"}
	env := mergeEnv(func(k string) string { return host[k] }, map[string]string{"PATH": "/opt/bin", "API_KEY": "x"})
	want := []string{"API_KEY=x", "HOME=/root", "PATH=/opt/bin"}
	if !slices.Equal(env, want) {
		t.Fatalf("env = %q, want %q", env, want)
	}
}

func TestLookPathUsesTheChildsPath(t *testing.T) {
	if _, err := lookPath("sh", "/nonexistent", ""); err == nil {
		t.Error("found sh on a PATH that does not have it")
	}
	if p, err := lookPath("sh", "/nonexistent:/bin:/usr/bin", ""); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("lookPath = %q, %v", p, err)
	}
	if _, err := lookPath("/etc", "", ""); err == nil {
		t.Error("a directory was taken for a command")
	}
}

// A server that prints a secret of its config on stderr: the kept line,
// which the logs route and test results show, has it masked.
func TestStderrLinesAreRedacted(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	bin := testserver.Binary(t)
	cfg := &sb.ServerConfig{Name: "chatty", Transport: sb.TransportStdio, Command: "/bin/sh",
		Args: []string{"-c", `echo "starting with key $API_KEY" >&2; exec "$0"`, bin},
		Env:  map[string]string{"API_KEY": secret}, ProtocolVersion: "2025-11-25"}
	s := New(cfg, &Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Shutdown(context.Background())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := s.Logs()
	if !slices.Contains(lines, "starting with key ***") {
		t.Fatalf("stderr lines %q, want the key masked", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, secret) {
			t.Fatalf("a stderr line shows the secret: %q", l)
		}
	}
}
