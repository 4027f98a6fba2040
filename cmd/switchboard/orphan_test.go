package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// A serve killed with -9 stops nothing itself: its stdio servers must not
// live on (they would until their stdin closed, or forever if they ignore
// it). Sandboxed ones die with bwrap (--die-with-parent); unsandboxed ones
// by Pdeathsig.
func TestStdioServersDieWithAKilledServe(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	c := d.Client(nil)
	defer c.Close()
	off := false
	ctx := context.Background()
	// The server outlives its stdin on purpose: when the test server ends
	// (stdin closed), the shell that ran it turns into a long sleep.
	if _, err := c.CreateServer(ctx, &sb.ServerConfig{Name: "plain", Transport: sb.TransportStdio,
		Command: "/bin/sh", Args: []string{"-c", `"$0"; exec sleep 3600`, testserver.Binary(t)},
		Sandbox: &sb.SandboxConfig{Enabled: &off}}); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if v, err := c.Server(ctx, "plain"); err == nil && v.Runtime.Status == sb.StatusConnected {
			pid = v.Runtime.PID
			break
		}
	}
	if pid == 0 {
		t.Fatal("the server never connected")
	}
	d.Kill()
	for deadline := time.Now().Add(10 * time.Second); proc.Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if proc.Alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the stdio server %d outlived its killed serve", pid)
	}
}
