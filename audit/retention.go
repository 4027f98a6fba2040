package audit

import (
	"context"
	"time"
)

// Retention bounds the audit log: entries older than MaxAge, and those
// beyond the newest MaxRows, are deleted in the background, the oldest
// first. Every replica on a shared database trims it; their passes delete
// the same oldest rows, so the bound holds whichever runs.
type Retention struct {
	// MaxAge deletes the entries older than it; zero keeps them.
	MaxAge time.Duration
	// MaxRows keeps the newest this many; zero keeps every one.
	MaxRows int64
	// Interval is how often the log is trimmed; if zero,
	// DefaultTrimInterval.
	Interval time.Duration
	// PerPass bounds the entries one delete removes, so that trimming a
	// long log never holds the database for long; if zero,
	// DefaultTrimPerPass. A trim repeats full passes up to MaxTrimPasses
	// times, then waits for the next Interval.
	PerPass int
}

// Defaults of Retention.
const (
	DefaultTrimInterval = time.Minute
	DefaultTrimPerPass  = 5000
	MaxTrimPasses       = 20
)

func (r Retention) enabled() bool { return r.MaxAge > 0 || r.MaxRows > 0 }

func (r Retention) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultTrimInterval
}

func (r Retention) perPass() int {
	if r.PerPass > 0 {
		return r.PerPass
	}
	return DefaultTrimPerPass
}

// Trim deletes what Retention no longer keeps, in at most MaxTrimPasses
// passes of PerPass entries, and returns how many it deleted. Run calls
// it every Retention.Interval.
func (l *Log) Trim(ctx context.Context) int64 {
	if !l.keep.enabled() {
		return 0
	}
	var before time.Time
	if l.keep.MaxAge > 0 {
		before = l.now().Add(-l.keep.MaxAge)
	}
	var total int64
	for range MaxTrimPasses {
		n, err := l.store.TrimAudit(ctx, before, l.keep.MaxRows, l.keep.perPass())
		total += n
		l.trimmed.Add(uint64(n))
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("the audit log could not be trimmed", "error", err)
			}
			break
		}
		if n < int64(l.keep.perPass()) {
			break
		}
	}
	return total
}

// trimEvery runs Trim every Retention.Interval until ctx ends.
func (l *Log) trimEvery(ctx context.Context) {
	t := time.NewTicker(l.keep.interval())
	defer t.Stop()
	for {
		l.Trim(ctx)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// Days is n days as a Retention.MaxAge.
func Days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }
