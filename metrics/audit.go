package metrics

import "github.com/prometheus/client_golang/prometheus"

// AuditLog reports what became of the audit log's entries; *audit.Log
// implements it.
type AuditLog interface {
	AuditCounts() (written, dropped, failed uint64, queued int)
}

// ReportAudit adds the metrics of the audit log a, read at scrape time.
// Call it at most once.
func (m *Metrics) ReportAudit(a AuditLog) {
	m.reg.MustRegister(&auditCollector{src: a})
}

var (
	auditEntriesDesc = prometheus.NewDesc("switchboard_audit_entries_total",
		"Audit log entries by what became of them: written to the database, or failed (the database refused their batch).",
		[]string{"result"}, nil)
	auditDroppedDesc = prometheus.NewDesc("switchboard_audit_dropped_total",
		"Audit log entries dropped because the queue to the database was full: the calls were served, their entries are missing.",
		nil, nil)
	auditQueuedDesc = prometheus.NewDesc("switchboard_audit_queued",
		"Audit log entries waiting to be written: queued, or in the batch being filled or written.", nil, nil)
)

type auditCollector struct{ src AuditLog }

func (c *auditCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- auditEntriesDesc
	ch <- auditDroppedDesc
	ch <- auditQueuedDesc
}

func (c *auditCollector) Collect(ch chan<- prometheus.Metric) {
	written, dropped, failed, queued := c.src.AuditCounts()
	ch <- prometheus.MustNewConstMetric(auditEntriesDesc, prometheus.CounterValue, float64(written), "written")
	ch <- prometheus.MustNewConstMetric(auditEntriesDesc, prometheus.CounterValue, float64(failed), "failed")
	ch <- prometheus.MustNewConstMetric(auditDroppedDesc, prometheus.CounterValue, float64(dropped))
	ch <- prometheus.MustNewConstMetric(auditQueuedDesc, prometheus.GaugeValue, float64(queued))
}
