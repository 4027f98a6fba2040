package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// End to end: a server that names itself with terminal escapes and a
// right-to-left override, shown by "server show" on a real daemon.
func TestHostileServerNamesReachTheTerminalEscaped(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	c := d.Client(nil)
	defer c.Close()
	hostile := "evil\x1b]0;owned\x07\u202egnp.exe"
	if _, err := c.CreateServer(context.Background(), &sb.ServerConfig{Name: "hostile", Transport: sb.TransportStdio,
		Command: testserver.Binary(t), Args: []string{"-name", hostile}}); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		cmd := daemontest.Command(t, "server", "show", "hostile", "--addr", d.URL)
		cmd.Env = append(cmd.Env, "SWITCHBOARD_TOKEN="+d.Token)
		var err error
		if out, err = cmd.Output(); err == nil && bytes.Contains(out, []byte("evil")) {
			break
		}
	}
	if !bytes.Contains(out, []byte(`evil\u001b]0;owned\u0007\u202egnp.exe`)) {
		t.Fatalf("server show:\n%s\nwant the name escaped", out)
	}
	if bytes.ContainsAny(out, "\x1b\x07\u202e") {
		t.Fatalf("raw control characters reached the terminal: %q", out)
	}
}
