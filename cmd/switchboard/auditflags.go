package main

import (
	"github.com/spf13/pflag"

	"github.com/switchboard-mcp/switchboard/internal/daemon"
)

// auditFlags configure the audit log of serve and stdio.
type auditFlags struct {
	on      bool
	days    int
	maxRows int64
}

// Defaults of the audit flags: a month, and a million entries (some
// 300 MB of PostgreSQL, less in SQLite).
const (
	defaultAuditDays    = 30
	defaultAuditMaxRows = 1_000_000
)

func (af *auditFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&af.on, "audit", true, "record every tool call, resource read, prompt get and API change in the database's audit log (switchboard audit reads it)")
	f.IntVar(&af.days, "audit-retention-days", defaultAuditDays, "delete audit entries older than this many days; 0: keep them")
	f.Int64Var(&af.maxRows, "audit-max-rows", defaultAuditMaxRows, "keep at most this many audit entries, the newest; 0: no cap")
}

func (af *auditFlags) config() (daemon.AuditConfig, error) {
	return daemon.AuditFrom(af.on, af.days, af.maxRows)
}
