// Command switchboard runs and manages MCP tool servers.
//
// serve is the daemon: it runs every configured server and serves the
// HTTP API, the aggregated MCP endpoint and the metrics; stdio serves the
// same servers as one MCP server on stdin and stdout, for clients that
// start their servers as a command. The client verbs (server, tools, call,
// import) drive a running daemon through its API (package client). check
// connects to one server described by flags, without a daemon: the
// quickest way to see whether a server works and, if not, where and why it
// fails.
//
// This package is flags, wiring and rendering only.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Upstream servers' words reach the terminal escaped (terminal.go).
	// "switchboard stdio" speaks MCP on os.Stdout itself, unfiltered.
	stdout, stderr := newTerminalWriter(os.Stdout), newTerminalWriter(os.Stderr)
	root := newRootCommand()
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(stderr, "switchboard:", err)
		os.Exit(1)
	}
}
