package api

import "time"

// Status is the answer of GET /api/v1/status: which Switchboard answered,
// for a deployment of several replicas on one database.
type Status struct {
	Replica Replica `json:"replica"`
}

// Replica names the replica that answered and how fresh its view of the
// database is.
type Replica struct {
	// ID is the replica's id: serve's --replica-id, or random at start.
	ID string `json:"id"`
	// LastSync is when its servers were last known to match the database
	// (a full resync, or a change applied from the change feed); null
	// before the first.
	LastSync *time.Time `json:"last_sync"`
	// ChangeFeed is true when the database reports other replicas' writes
	// as they commit (PostgreSQL); without it they arrive with the periodic
	// resync only.
	ChangeFeed bool `json:"change_feed"`
}
