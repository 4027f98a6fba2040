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
// This package is flags and wiring only: what the verbs print is package
// internal/render, the client configs that import reads and client-config
// writes package clientconfig, what the client verbs' flags make of a
// config (server edit's change, a sandbox, a toolset) package client, and
// what serve's and stdio's flags make of the daemon's options package
// internal/daemon.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-mcp/switchboard/internal/render"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Upstream servers' words reach the terminal escaped (render.TerminalWriter).
	// "switchboard stdio" speaks MCP on os.Stdout itself, unfiltered.
	stdout, stderr := render.NewTerminalWriter(os.Stdout), render.NewTerminalWriter(os.Stderr)
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
