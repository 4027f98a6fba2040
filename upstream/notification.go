package upstream

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Notification is a server's notification that is not about one call: a
// log message (*mcp.LoggingMessageParams) or a resource update
// (*mcp.ResourceUpdatedNotificationParams), as Options.OnNotification
// receives it, with the name of the server that sent it. The registry
// fans them out to its subscribers; the gateway relays them downstream.
type Notification struct {
	Server string
	Params mcp.Params
}
