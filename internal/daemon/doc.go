// Package daemon assembles and runs what "switchboard serve" and
// "switchboard stdio" are: the store, the registry of servers and their
// sessions, the executor, the MCP gateway, and for serve the HTTP API,
// the web page, the metrics and the listener, with the rules of who may
// connect (auth.go) and the lock of a SQLite database (lock.go).
//
// cmd/switchboard parses the flags into a Config (or StdioConfig) and a
// gateway.Options and calls Serve (or Stdio). Errors name the flags a
// person would change, since a person at serve's command line reads them.
package daemon
