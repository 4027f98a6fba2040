package upstream

// CapSessions returns how many capability-set sessions s has (capset.go).
func CapSessions(s *Session) int { return s.capSessions.count() }
