// Package audit keeps Switchboard's audit log: one entry per tools/call,
// resources/read, prompts/get and API request that changes something,
// from every surface (/mcp, /mcp/{name}, the toolset endpoints, the API,
// switchboard stdio), saying who (the principal's name, never a secret),
// where (the surface), what (server, tool, resource or prompt), with what
// outcome, how long, how large, and the SHA-256 of the arguments. The
// arguments themselves are kept only for a server whose config opts in
// ("audit": {"arguments": true}), masked as views mask secrets.
//
// A call never waits for the log: Record puts the entry on a bounded
// queue and returns; Run writes the queue to the store in batches (by
// size, or every FlushInterval) and trims the log to its retention. When
// the queue is full an entry is dropped and counted (Stats.Dropped,
// switchboard_audit_dropped_total in /metrics), never waited for.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// Defaults of Options.
const (
	DefaultQueueSize     = 16384
	DefaultBatchSize     = 512
	DefaultFlushInterval = time.Second
)

// Options configure a Log. Store is required.
type Options struct {
	Store sb.AuditStore
	// KeepsArguments returns the config of a server that keeps its
	// calls' arguments (sb.AuditConfig), whose secrets they are masked
	// of; nil for any other server (registry.Registry.KeepsArguments).
	// It is asked on every call with arguments, so it must be cheap. Nil:
	// arguments are never kept.
	KeepsArguments func(server string) *sb.ServerConfig
	// QueueSize bounds the entries waiting to be written; one more is
	// dropped. If zero, DefaultQueueSize.
	QueueSize int
	// BatchSize is how many entries are written at once; a full batch is
	// written at once. If zero, DefaultBatchSize.
	BatchSize int
	// FlushInterval is the longest an entry waits for a batch to fill.
	// If zero, DefaultFlushInterval.
	FlushInterval time.Duration
	// Retention bounds the log (retention.go). The zero value keeps
	// everything.
	Retention Retention
	Logger    *slog.Logger
	// Now is the clock of the entries and of retention; time.Now if nil.
	Now func() time.Time
}

// Log is the audit log of one process. Its methods are safe for
// concurrent use; a nil *Log records nothing.
type Log struct {
	store    sb.AuditStore
	keeps    func(string) *sb.ServerConfig
	batch    int
	interval time.Duration
	keep     Retention
	log      *slog.Logger
	now      func() time.Time

	queue                    chan pending
	written, dropped, failed atomic.Uint64
	trimmed                  atomic.Uint64
	// waiting counts the entries recorded and not yet written or
	// failed: on the queue, and in the batch Run is filling or writing,
	// where an entry waits up to FlushInterval.
	waiting atomic.Int64
}

// pending is an entry on its way to the store, with the arguments to
// mask, if its server keeps them.
type pending struct {
	sb.AuditEntry
	sum    [sha256.Size]byte // of the arguments, if hashed: encoded by Run
	hashed bool
	args   []byte
	cfg    *sb.ServerConfig
}

// New returns a log over o.Store. Nothing is written until Run runs.
func New(o Options) *Log {
	l := &Log{store: o.Store, keeps: o.KeepsArguments, batch: o.BatchSize, interval: o.FlushInterval, keep: o.Retention,
		log: o.Logger, now: o.Now}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if l.batch <= 0 {
		l.batch = DefaultBatchSize
	}
	if l.interval <= 0 {
		l.interval = DefaultFlushInterval
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.queue = make(chan pending, o.QueueSize)
	return l
}

// Store is the store the log writes to, for reading it.
func (l *Log) Store() sb.AuditStore { return l.store }

// Now is the log's clock.
func (l *Log) Now() time.Time { return l.now() }

// Record queues e, whose arguments (or API request body) were args, and
// returns at once: if the queue is full, e is dropped and counted.
// Record sets e's ArgsSHA256 from args, and its RequestBytes if zero; the
// surface and toolset from ctx (WithSurface) if e names none, and the
// principal from ctx (sb.PrincipalFrom; PrincipalLocal if none) if e
// names none. args is kept (masked, by Run) only if e's server opted in;
// the caller must not change it after.
func (l *Log) Record(ctx context.Context, e sb.AuditEntry, args []byte) {
	if l == nil {
		return
	}
	noteRecorded(ctx)
	if e.Surface == "" {
		e.Surface, e.Toolset = SurfaceFrom(ctx)
	}
	if e.Principal == "" {
		e.Principal = sb.PrincipalLocal
		if p, ok := sb.PrincipalFrom(ctx); ok && p.Name != "" {
			e.Principal = p.Name
		}
	}
	p := pending{AuditEntry: e}
	if len(args) > 0 && string(args) != "null" {
		p.sum, p.hashed = sha256.Sum256(args), true
		if p.RequestBytes == 0 {
			p.RequestBytes = int64(len(args))
		}
		if l.keeps != nil && e.Kind != sb.AuditAPI {
			if cfg := l.keeps(e.Server); cfg != nil {
				p.args, p.cfg = args, cfg
			}
		}
	}
	// Counted before it is queued, so that Run never uncounts an entry
	// not yet counted.
	l.waiting.Add(1)
	select {
	case l.queue <- p:
	default:
		l.waiting.Add(-1)
		l.dropped.Add(1)
	}
}

// Stats count what became of the recorded entries since the start.
type Stats struct {
	Written uint64 // stored
	Dropped uint64 // not queued: the queue was full
	Failed  uint64 // queued, but the store refused their batch
	Trimmed uint64 // deleted by retention (by this process)
	// Queued counts the entries waiting now: on the queue, or in the
	// batch being filled (for up to FlushInterval) or written.
	Queued int
}

// Stats returns the log's counts.
func (l *Log) Stats() Stats {
	return Stats{Written: l.written.Load(), Dropped: l.dropped.Load(), Failed: l.failed.Load(), Trimmed: l.trimmed.Load(),
		Queued: int(l.waiting.Load())}
}

// flushTimeout bounds the write of the last batches when Run ends.
const flushTimeout = 10 * time.Second

// Run writes the queued entries until ctx ends, then writes what is
// queued still (within flushTimeout) and returns. It also trims the log
// (Retention) every Retention.Interval, from the start. Call it once.
func (l *Log) Run(ctx context.Context) {
	flush := time.NewTicker(l.interval)
	defer flush.Stop()
	if l.keep.enabled() {
		// Trimming has its own goroutine: a long delete must not hold up
		// the writes, or the queue would fill.
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			l.trimEvery(ctx)
		}()
	}
	batch := make([]sb.AuditEntry, 0, l.batch)
	// A write is not cancelled when Run is told to end: the entries
	// would be lost. The store's own bounds apply, and the last writes'
	// flushTimeout.
	wctx := context.WithoutCancel(ctx)
	var reported uint64 // drops logged so far
	write := func(ctx context.Context) {
		if len(batch) == 0 {
			return
		}
		if err := l.store.AppendAudit(ctx, batch); err != nil {
			l.failed.Add(uint64(len(batch)))
			l.log.Warn("audit entries were lost: the database refused them", "entries", len(batch), "error", err)
		} else {
			l.written.Add(uint64(len(batch)))
		}
		l.waiting.Add(-int64(len(batch)))
		batch = batch[:0]
	}
	for {
		select {
		case p := <-l.queue:
			batch = append(batch, p.entry())
			if len(batch) == l.batch {
				write(wctx)
			}
		case <-flush.C:
			write(wctx)
			reported = l.reportDrops(reported)
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(wctx, flushTimeout)
			defer cancel()
			for {
				select {
				case p := <-l.queue:
					batch = append(batch, p.entry())
					if len(batch) == l.batch {
						write(fctx)
					}
					continue
				default:
				}
				write(fctx)
				return
			}
		}
	}
}

// reportDrops logs the entries dropped since reported were, if any, and
// returns how many are now: once a flush, not once an entry.
func (l *Log) reportDrops(reported uint64) uint64 {
	n := l.dropped.Load()
	if n > reported {
		l.log.Warn("audit entries were dropped: the queue to the database was full (switchboard_audit_dropped_total counts them)",
			"dropped", n-reported, "queue", cap(l.queue))
	}
	return n
}

// entry is p as stored: its arguments masked, if kept.
func (p *pending) entry() sb.AuditEntry {
	e := p.AuditEntry
	if p.hashed {
		e.ArgsSHA256 = hex.EncodeToString(p.sum[:])
	}
	if p.cfg != nil {
		e.Arguments = sb.MaskArguments(json.RawMessage(p.args), sb.NewRedactor(p.cfg))
	}
	return e
}

// AuditCounts reports Stats for /metrics (metrics.AuditLog).
func (l *Log) AuditCounts() (written, dropped, failed uint64, queued int) {
	s := l.Stats()
	return s.Written, s.Dropped, s.Failed, s.Queued
}
