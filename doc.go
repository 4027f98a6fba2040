// Package switchboard holds the domain shared by every layer of Switchboard:
// a server's configuration ([ServerConfig]) and its validation; the runtime
// view of an upstream session ([RuntimeInfo], [Status], [Phase]); the options
// of one tool call ([InvokeOptions]); the one vocabulary of failures ([Code],
// [CodeOf], [PhaseOf]); secrets and how they are masked and redacted
// ([SecretMask], [Redactor]); events ([Event], [Reason]); toolsets
// ([Toolset], whose Allows decides what a toolset's clients may see and
// use) and scoped API tokens ([Token], [Scope], [Principal], whose Allows
// decides which endpoints a credential reaches); the audit log's entries
// ([AuditEntry]); and the [Store], [ToolsetStore], [TokenStore] and
// [AuditStore] interfaces. It imports no other package of Switchboard.
//
// The implementations live in packages named after what they wrap, each
// depending only on those listed before it:
//
//	egress      where a remote session's requests may go: addresses, origins,
//	            Switchboard-Via
//	wire        the connections under every upstream session (a byte stream,
//	            Streamable HTTP, legacy SSE): requests and results as bytes,
//	            failures as *wire.Error
//	oauthclient the OAuth client of remote sessions
//	telemetry   OpenTelemetry traces from the OTEL_* environment; W3C trace
//	            context from headers or _meta to headers or _meta
//	upstream    one long-lived MCP client session per server: the state machine,
//	            stdio and remote links, reconnects, health, CallTool
//	executor    Execute(ctx, "server/tool", args, opts) over plugins (MCP today)
//	store/...   the Store in SQLite (sqlite) or PostgreSQL (postgres); storetest
//	            is the contract suite both pass
//	registry    the configured servers and their sessions, changed at runtime;
//	            the toolsets and tokens, kept in step with other replicas
//	metrics     Prometheus collectors: server state, call outcomes by Code
//	toolsearch  an in-memory BM25F index of tools, kept per server (search
//	            mode, GET /api/v1/tools?search=)
//	stats       the last hour of every server's calls, by the minute, in memory
//	audit       the audit log: entries queued off the calls' path, written in
//	            batches, trimmed to its retention; an executor plugin records
//	            tools/call
//	gateway     the MCP endpoint: /mcp, /mcp/{name}, /toolsets/{name}/mcp and
//	            the stdio server
//	api         the HTTP API's wire types, shared by server and client
//	httpapi     the HTTP API: routes, status per Code
//	client      a Go client of the HTTP API (the CLI uses it)
//	clientconfig reading, importing and writing MCP clients' config files
//	cmd/switchboard  the binary: its verbs and flags (internal/daemon runs
//	            serve and stdio; internal/render prints)
//
// internal/sse reads and writes server-sent events for httpapi and client;
// internal/prompt asks a person for an elicitation's answer in a terminal.
// Tests share internal/testserver (a fault-injecting MCP server run as a real
// process), internal/daemontest (switchboard serve run as a real process) and
// internal/pgtest (a fresh PostgreSQL database), internal/otlptest (an
// OTLP/HTTP trace receiver); bench holds the benchmark
// harness, reliability the failure and chaos suites, conformance the official
// MCP conformance suite run directly and through Switchboard.
package switchboard
