// Package switchboard holds the domain types shared by every layer of
// Switchboard: a server's configuration ([ServerConfig]), its validation, and
// the runtime view of an upstream session ([RuntimeInfo], [Status], [Phase]).
//
// Implementations live in packages named after what they wrap: upstream
// (one long-lived MCP client session per configured server), and later the
// store, registry and HTTP layers. This package imports none of them.
package switchboard
