package upstream

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// Progress notifications are taken off the wire, not from the go-sdk's
// notification handler. The go-sdk retires a response in its read loop but
// runs notification handlers on another goroutine, so a call could return
// before the progress the server sent ahead of its result had been
// delivered, or a callback could run after the call returned. The link's
// connection (wire.Options.OnMessage) shows every message in wire order,
// on the goroutine that reads them: every progress notification is
// delivered before the bytes that follow it (the result) are even parsed.

// maxTapLine bounds the message examined for progress. Progress
// notifications are small; a longer message is a result or some other
// message and is passed through unexamined.
const maxTapLine = 64 << 10

var progressMethod = []byte(`"notifications/progress"`)

// onWire examines one JSON-RPC message from the server and delivers it if
// it is a progress notification of a call in flight.
func (s *Session) onWire(msg []byte) {
	if len(msg) > maxTapLine || !rawjson.Contains(msg, progressMethod) {
		return // a progress notification is short: a long line is a result
	}
	var n struct {
		Method string                         `json:"method"`
		Params mcp.ProgressNotificationParams `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != "notifications/progress" {
		return
	}
	if c := s.calls.byToken(n.Params.ProgressToken); c != nil {
		c.progress(&n.Params)
	}
}
