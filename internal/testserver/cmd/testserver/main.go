// Command testserver is the fault-injecting MCP server used by the project's
// tests and benchmarks; see package testserver for its flags.
package main

import (
	"os"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

func main() {
	os.Exit(testserver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
