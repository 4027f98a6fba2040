// Package daemon assembles and runs what "switchboard serve" and
// "switchboard stdio" are: the store, the registry of servers and their
// sessions, the executor, the MCP gateway, and for serve the HTTP API,
// the web page, the metrics and the listener, with the rules of who may
// connect (auth.go) and the lock of a SQLite database (lock.go).
//
// cmd/switchboard binds the flags to a Config (or StdioConfig), an
// Endpoint and Sessions, which flags.go checks and makes a
// gateway.Options of, and calls Serve (or Stdio). Errors name the flags a
// person would change, since a person at serve's command line reads them.
package daemon
