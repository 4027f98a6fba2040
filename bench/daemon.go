package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// daemon is a `switchboard serve` process started with internal/daemontest:
// on 127.0.0.1 with an ephemeral port, a SQLite database of the harness's,
// no token, logging at info level with the Go runtime's GC trace, in its
// own process group; and what its log said.
type daemon struct {
	*daemontest.Daemon
	api        *client.Client
	allStarted chan struct{} // closed at "every server started"

	mu              sync.Mutex
	log             daemonLog
	lastConnectedAt time.Time // when the last "upstream connected" was read
	allStartedAt    time.Time // when "every server started" was read
}

// daemonLog is what the daemon's log said, with the times the harness read
// each line (since the exec).
type daemonLog struct {
	Connected     int           // "upstream connected" lines
	LastConnected time.Duration // when the last of them was read
	AllStarted    time.Duration // when "every server started" was read
	Elapsed       time.Duration // its elapsed=: serve's own clock, from the start of serve()
	ShuttingDown  time.Time     // the time= of "shutting down"
	Stopped       time.Time     // the time= of "stopped"

	// The last line of the GC trace (GODEBUG=gctrace=1).
	GCs      int
	GCAt     time.Duration // since the process started, as the trace says
	HeapLive uint64        // marked live at the end of that collection
	HeapGoal uint64
	Stacks   uint64

	Problems []string // the first lines at level WARN or ERROR
}

// maxProblems bounds the WARN and ERROR lines a daemonLog keeps.
const maxProblems = 8

// startDaemon starts bin serve on db, with more flags args, and waits up
// to 30 s for its API to answer (daemontest.StartProcess). The caller
// kills it.
func startDaemon(ctx context.Context, bin, db string, args ...string) (*daemon, error) {
	d := &daemon{allStarted: make(chan struct{})}
	godebug := "gctrace=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	var err error
	d.Daemon, err = daemontest.StartProcess(ctx, daemontest.Options{
		Binary:    bin,
		DB:        "sqlite:" + db,
		LogLevel:  "info",
		Args:      args,
		Env:       []string{"GODEBUG=" + godebug},
		OnLine:    d.readLine,
		StopGrace: daemonGrace,
	})
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d.api = d.Client(&client.Options{HTTPClient: &http.Client{Transport: tr, Timeout: time.Minute}})
	return d, nil
}

// gcTrace matches the parts of a gctrace line the harness keeps.
var gcTrace = regexp.MustCompile(`^gc (\d+) @([0-9.]+)s .* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal, (\d+) MB stacks`)

// readLine notes what one line of the daemon's log says.
func (d *daemon) readLine(line string) {
	at := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := gcTrace.FindStringSubmatch(line); m != nil {
		d.log.GCs, _ = strconv.Atoi(m[1])
		if s, err := strconv.ParseFloat(m[2], 64); err == nil {
			d.log.GCAt = time.Duration(s * float64(time.Second))
		}
		d.log.HeapLive, d.log.HeapGoal, d.log.Stacks = megabytes(m[5]), megabytes(m[6]), megabytes(m[7])
		return
	}
	kv := daemontest.ParseLogLine(line)
	switch kv["msg"] {
	case "every server started":
		d.log.Elapsed, _ = time.ParseDuration(kv["elapsed"])
		if d.allStartedAt.IsZero() {
			close(d.allStarted)
		}
		d.allStartedAt = at
	case "upstream connected":
		d.log.Connected++
		d.lastConnectedAt = at
	case "shutting down":
		d.log.ShuttingDown, _ = time.Parse(time.RFC3339Nano, kv["time"])
	case "stopped":
		d.log.Stopped, _ = time.Parse(time.RFC3339Nano, kv["time"])
	}
	if lvl := kv["level"]; (lvl == "WARN" || lvl == "ERROR") && len(d.log.Problems) < maxProblems {
		d.log.Problems = append(d.log.Problems, line)
	}
}

func megabytes(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n << 20
}

// snapshotLog returns what the log said so far.
func (d *daemon) snapshotLog() daemonLog {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.log
	l.Problems = append([]string(nil), d.log.Problems...)
	if !d.lastConnectedAt.IsZero() {
		l.LastConnected = d.lastConnectedAt.Sub(d.Started)
	}
	if !d.allStartedAt.IsZero() {
		l.AllStarted = d.allStartedAt.Sub(d.Started)
	}
	return l
}

// terminate stops the daemon (SIGTERM, then its process group killed
// after daemonGrace) and returns how long it took to be reaped after the
// signal, and whether it exited by itself.
func (d *daemon) terminate() (time.Duration, bool) {
	start := time.Now()
	err := d.Stop()
	return time.Since(start), !errors.Is(err, daemontest.ErrStopTimeout)
}

// kill kills the daemon's process group, waits until it is reaped (its
// log is then complete), and closes the harness's idle connections. It is
// safe to call more than once.
func (d *daemon) kill() {
	d.Kill()
	d.api.Close()
}

// waitServerConnected polls one server every 20 ms until it is connected,
// up to timeout.
func (d *daemon) waitServerConnected(ctx context.Context, name string, timeout time.Duration) (sb.ServerView, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s, err := d.api.Server(ctx, name)
		if err == nil && s.Runtime.Status == sb.StatusConnected {
			return s, nil
		}
		select {
		case <-ctx.Done():
			if err == nil && s.Runtime.Error != nil {
				err = errors.New(s.Runtime.Error.Message)
			}
			return s, fmt.Errorf("server %s not connected within %s (status %q): %v", name, timeout, s.Runtime.Status, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitAuditWritten polls serve's /metrics every 20 ms until its audit log
// has written every entry recorded so far (switchboard_audit_queued is 0),
// up to timeout. serve writes the log once a second: without the wait, the
// writes of one block's calls land in whichever block follows.
func (d *daemon) waitAuditWritten(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	queued := "no switchboard_audit_queued in its /metrics (is the audit log off?)"
	for {
		text, err := d.api.Metrics(ctx)
		if err == nil {
			for line := range strings.Lines(text) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "switchboard_audit_queued "); ok {
					if v == "0" {
						return nil
					}
					queued = v + " entries still queued"
				}
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				queued = err.Error()
			}
			return fmt.Errorf("the daemon's audit log was not written within %s: %s", timeout, queued)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
