// Package conformance holds Switchboard's acceptance test against the
// official MCP conformance suite (@modelcontextprotocol/conformance): the
// suite's server scenarios run against the Go SDK's everything-server
// directly, then through Switchboard's /mcp/{name}, and the two must pass
// the same scenarios; and the suite's client auth/* scenarios run against
// Switchboard's OAuth client (command authclient). The package has no code
// outside its tests and that command; see README.md for how to run it.
package conformance
