package api

import "time"

// Stats is the answer of GET /api/v1/servers/{name}/stats (one server's
// tool calls) and of GET /api/v1/stats (every call of the daemon, with a
// line per server): the last hour in minute buckets, kept in memory by
// the serve that answers (a restart starts empty; each replica counts its
// own calls).
type Stats struct {
	// Server is the server counted; absent for the whole daemon.
	Server string `json:"server,omitempty"`
	// From is the start of the oldest minute, To the time of the answer:
	// the current minute is partial.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// The hour's totals.
	StatsSummary
	// Minutes are the hour's minutes, oldest first, always
	// StatsMinutes of them (a minute without calls counts zero).
	Minutes []StatsMinute `json:"minutes"`
	// Servers are the hour's totals of every configured server, by name;
	// only GET /api/v1/stats has them.
	Servers []ServerStats `json:"servers,omitempty"`
}

// StatsMinutes is how many minutes a Stats holds.
const StatsMinutes = 60

// StatsSummary counts calls over a span. Latencies are estimated from a
// histogram whose bins are a factor √2 wide (within 19 %); they are absent
// when no call ended in the span.
type StatsSummary struct {
	// Calls are the tool calls that ended; Errors those that failed,
	// the tool's own isError results among them.
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	// P50MS and P99MS are the median and the 99th percentile of their
	// durations, in milliseconds.
	P50MS float64 `json:"p50_ms,omitempty"`
	P99MS float64 `json:"p99_ms,omitempty"`
}

// StatsMinute is one minute of a Stats.
type StatsMinute struct {
	Start time.Time `json:"start"`
	StatsSummary
}

// ServerStats is one server's line in the daemon's Stats.
type ServerStats struct {
	Server string `json:"server"`
	StatsSummary
}
