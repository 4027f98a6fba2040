package switchboard

import "time"

// Event reports a change of a session: every status transition, and every
// change of its tool list. The API streams them from /api/v1/events.
type Event struct {
	Server     string     `json:"server"`
	Reason     Reason     `json:"reason"`
	Status     Status     `json:"status"`
	Previous   Status     `json:"previous"`
	Error      *ErrorInfo `json:"error,omitempty"`
	Attempt    int        `json:"attempt"`
	Reconnects int        `json:"reconnects"`
	At         time.Time  `json:"at"`
}

// Reason says why an Event happened.
type Reason string

// Reasons a session reports.
const (
	ReasonStarting      Reason = "starting"       // an attempt began
	ReasonConnected     Reason = "connected"      // an attempt succeeded
	ReasonAttemptFailed Reason = "attempt_failed" // an attempt failed; Error says why
	ReasonDropped       Reason = "dropped"        // a connected session was lost; Error says why
	ReasonRestarted     Reason = "restarted"      // someone asked for a restart
	ReasonToolsChanged  Reason = "tools_changed"  // the tool, resource or prompt lists changed
	ReasonStopped       Reason = "stopped"        // the session was shut down
)

// Reasons the registry reports when a server's config changes.
const (
	ReasonCreated Reason = "created" // a server was added
	ReasonUpdated Reason = "updated" // its config changed (or it was enabled or disabled)
	ReasonDeleted Reason = "deleted" // it was removed; Status reads disabled
)
