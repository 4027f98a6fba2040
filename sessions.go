package switchboard

// SessionStats describes the downstream Streamable HTTP sessions of a
// gateway's MCP endpoint: what the gateway counts and the metrics report.
type SessionStats struct {
	// Live is how many sessions there are: from their successful
	// initialize until they end.
	Live int
	// MaxSessions, MaxSessionsPerAddress and MaxSessionsPerPrincipal are
	// the caps in force; 0 for none.
	MaxSessions, MaxSessionsPerAddress, MaxSessionsPerPrincipal int
	// RefusedGlobal, RefusedPerAddress and RefusedPerPrincipal count the
	// new sessions refused since the gateway started, by the cap that
	// refused them.
	RefusedGlobal, RefusedPerAddress, RefusedPerPrincipal uint64
	// Expired counts the sessions that the idle timeout ended since the
	// gateway started (the others ended with a DELETE).
	Expired uint64
}
