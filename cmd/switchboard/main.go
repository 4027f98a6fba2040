// Command switchboard runs and manages MCP tool servers.
//
// Today it has one verb, check, which connects to one MCP server described
// on the command line, lists what it offers, and shuts it down: the quickest
// way to see whether a server works and, if not, where and why it fails.
// The daemon (serve) and the client verbs follow with the registry.
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
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}
