// Package render is what the switchboard CLI prints, for a person or a
// script: the tables of servers, tools, toolsets and tokens, a server's
// view, a check's runtime info, a tool call (its progress, the questions
// of an elicitation, its result or failure), status events and logs, a
// change of a server and the outcome of its --wait with what to do about
// a failure, an OAuth authorization, and indented JSON for -o json.
//
// Much of it comes from upstream servers, which may put terminal control
// sequences in a name, a result or a log line: the CLI writes through a
// TerminalWriter, which shows them escaped (terminal.go).
//
// Nothing here reads a flag: cmd/switchboard parses them and passes what
// they say (wide, asJSON, the progress mode).
package render
