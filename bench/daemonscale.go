package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// DaemonEmpty is the kind of a daemon-scale run with no server: the
// baseline the others' memory is measured against.
const DaemonEmpty = "empty"

// daemonGrace bounds the wait for a daemon to exit after SIGTERM; serve
// itself gives HTTP and the sessions 10 s.
const daemonGrace = 30 * time.Second

// DaemonResult is one run of the daemon-scale scenario: one `switchboard
// serve` process over a database holding Servers configs of one kind.
// Times are from the exec of serve, by the harness's clock, unless said
// otherwise.
type DaemonResult struct {
	Run       int    `json:"run,omitempty"` // which run of a merged report (see Merge)
	Rep       int    `json:"rep"`
	Kind      string `json:"kind"` // DaemonEmpty, ScaleStdio or ScaleHTTP
	Servers   int    `json:"servers"`
	Connected int    `json:"connected"` // by the last poll of GET /api/v1/servers
	Protocol  string `json:"protocol"`  // of the first server
	// FirstError is the first server's error that was not connected at
	// the end, or a failure of the scenario itself.
	FirstError string `json:"first_error,omitempty"`

	APIUp         time.Duration `json:"api_up"`         // GET /healthz first answered
	AllStarted    time.Duration `json:"all_started"`    // "every server started" read from the log
	LoggedElapsed time.Duration `json:"logged_elapsed"` // its elapsed=, by serve's clock from the start of serve()
	LastConnected time.Duration `json:"last_connected"` // the last "upstream connected" line read
	PollConnected time.Duration `json:"poll_connected"` // the first poll that listed every server connected
	Polls         int           `json:"polls"`

	// The daemon's memory, idle: VmRSS samples of the serve process alone
	// (its children are other processes), and the median's RssAnon.
	RSS     []uint64 `json:"rss"`
	RSSAnon uint64   `json:"rss_anon"`
	Threads int      `json:"threads"`
	FDs     int      `json:"fds"`
	// The last line of the daemon's GC trace before the samples.
	GCs      int           `json:"gcs"`
	GCAt     time.Duration `json:"gc_at"` // since the process started
	HeapLive uint64        `json:"heap_live"`
	HeapGoal uint64        `json:"heap_goal"`
	Stacks   uint64        `json:"stacks"`
	// From serve's /metrics, idle: the goroutine stacks in use
	// (go_memstats_stack_inuse_bytes) and the goroutines.
	StackInuse uint64 `json:"stack_inuse"`
	Goroutines int    `json:"goroutines"`

	// The daemon's children (the stdio servers) and the HTTP testserver.
	Children    int    `json:"children"`
	ChildrenRSS uint64 `json:"children_rss"`
	ChildrenPSS uint64 `json:"children_pss"`
	ServerRSS   uint64 `json:"server_rss"`

	// Shutdown: SIGTERM until the daemon was reaped, and serve's own
	// "shutting down" to "stopped" (log timestamps).
	ShutdownTime   time.Duration `json:"shutdown_time"`
	ShutdownLogged time.Duration `json:"shutdown_logged"`
	ExitedBySelf   bool          `json:"exited_by_self"`
	ExitCode       int           `json:"exit_code"`
	// Left counts the testserver processes (zombies excluded) still
	// running once the daemon was reaped; the harness then kills them.
	Left     int      `json:"left"`
	Problems []string `json:"problems,omitempty"` // WARN and ERROR lines of the daemon's log
}

// RSSMedian is the median of the idle samples.
func (r *DaemonResult) RSSMedian() float64 {
	xs := make([]float64, len(r.RSS))
	for i, v := range r.RSS {
		xs[i] = float64(v)
	}
	return Summarize(xs).Median
}

// runDaemonScale runs cfg.DaemonReps repetitions of: a daemon with no
// server, one with cfg.StdioSessions stdio servers, one with
// cfg.HTTPSessions streamable-http servers pointing at one testserver.
func runDaemonScale(ctx context.Context, cfg *Config) ([]*DaemonResult, error) {
	var out []*DaemonResult
	for rep := range cfg.DaemonReps {
		for _, k := range []struct {
			kind string
			n    int
		}{{DaemonEmpty, 0}, {ScaleStdio, cfg.StdioSessions}, {ScaleHTTP, cfg.HTTPSessions}} {
			r, err := runDaemon(ctx, cfg, k.kind, k.n)
			if err != nil {
				return nil, fmt.Errorf("daemon-scale %s, repetition %d: %w", k.kind, rep+1, err)
			}
			r.Rep = rep + 1
			out = append(out, r)
		}
	}
	return out, nil
}

// runDaemon measures one daemon: its database is filled with n configs of
// kind before serve starts, so that the clock starts with the process.
func runDaemon(ctx context.Context, cfg *Config, kind string, n int) (*DaemonResult, error) {
	r := &DaemonResult{Kind: kind, Servers: n}
	dir, err := os.MkdirTemp("", "sbbench-daemon-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	base := sb.ServerConfig{Transport: sb.TransportStdio, Command: cfg.Testserver}
	var server *httpServer
	if kind == ScaleHTTP {
		if server, err = startHTTPServer(cfg.Testserver); err != nil {
			return nil, err
		}
		defer server.stop()
		base = sb.ServerConfig{Transport: sb.TransportStreamableHTTP, URL: server.url}
	}
	db := filepath.Join(dir, "switchboard.db")
	if err := fillStore(ctx, db, &base, n); err != nil {
		return nil, err
	}

	d, err := startDaemon(ctx, cfg.Switchboard, db)
	if err != nil {
		return nil, err
	}
	defer d.kill()
	r.APIUp = d.Ready.Sub(d.Started)
	var states []sb.ServerView
	states, r.PollConnected, r.Polls = pollConnected(ctx, cfg, d, n)
	for _, s := range states {
		if s.Runtime.Status == sb.StatusConnected {
			r.Connected++
			if r.Protocol == "" {
				r.Protocol = s.Runtime.ProtocolVersion
			}
		} else if r.FirstError == "" {
			r.FirstError = fmt.Sprintf("%s: %s", s.Name, s.Runtime.Status)
			if e := s.Runtime.Error; e != nil {
				r.FirstError += ": " + e.Message
			}
		}
	}
	// The log line comes with the last start; wait for it a little.
	t := time.NewTimer(10 * time.Second)
	select {
	case <-d.allStarted:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	cfg.logf("daemon-scale %s: %d/%d connected; API up %s, every server started (log) %s, last connected %s, poll %s",
		kind, r.Connected, n, r.APIUp.Round(time.Millisecond), d.snapshotLog().AllStarted.Round(time.Millisecond),
		d.snapshotLog().LastConnected.Round(time.Millisecond), r.PollConnected.Round(time.Millisecond))

	// Idle: let set-up work finish, then sample.
	if !sleepCtx(ctx, cfg.DaemonSettle) {
		return nil, ctx.Err()
	}
	var anon []uint64
	for i := range cfg.DaemonSamples {
		if i > 0 && !sleepCtx(ctx, cfg.DaemonSampleEvery) {
			return nil, ctx.Err()
		}
		r.RSS = append(r.RSS, rssBytes(d.PID))
		a, _ := procStatusField(fmt.Sprintf("/proc/%d/status", d.PID), "RssAnon")
		anon = append(anon, a<<10)
	}
	slices.Sort(anon)
	r.RSSAnon = anon[len(anon)/2]
	if m, err := d.api.Metrics(ctx); err == nil {
		stacks, _ := client.MetricValue(m, "go_memstats_stack_inuse_bytes")
		goroutines, _ := client.MetricValue(m, "go_goroutines")
		r.StackInuse, r.Goroutines = uint64(stacks), int(goroutines)
	}
	threads, _ := procStatusField(fmt.Sprintf("/proc/%d/status", d.PID), "Threads")
	r.Threads, r.FDs = int(threads), countFDs(d.PID)
	log := d.snapshotLog()
	r.GCs, r.GCAt, r.HeapLive, r.HeapGoal, r.Stacks = log.GCs, log.GCAt, log.HeapLive, log.HeapGoal, log.Stacks
	// Each stdio server is a child (bwrap, or the server itself); a
	// sandbox with network on has a second, its slirp4netns, whose memory
	// counts with the children's but which is no server.
	for _, pid := range childrenOf(d.PID) {
		r.ChildrenRSS += rssBytes(pid)
		r.ChildrenPSS += pssBytes(pid)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "slirp4netns" {
			r.Children++
		}
	}
	if server != nil {
		r.ServerRSS = rssBytes(server.pid)
	}

	r.ShutdownTime, r.ExitedBySelf = d.terminate()
	r.ExitCode = d.ExitCode()
	var except []int
	if server != nil {
		except = append(except, server.pid)
	}
	left := procsRunning(cfg.Testserver, except...)
	r.Left = len(left)
	for _, pid := range left { // started by the daemon, which is gone
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	d.kill() // the log is complete once it is reaped
	log = d.snapshotLog()
	r.AllStarted, r.LoggedElapsed, r.LastConnected = log.AllStarted, log.Elapsed, log.LastConnected
	if !log.ShuttingDown.IsZero() && !log.Stopped.IsZero() {
		r.ShutdownLogged = log.Stopped.Sub(log.ShuttingDown)
	}
	r.Problems = log.Problems
	cfg.logf("daemon-scale %s: RSS %s (anon %s), %d threads, %d fds, %d children; heap live %s at the last GC (%d, at %s); shutdown %s (logged %s), exit %d, left %d",
		kind, fmtBytes(r.RSSMedian()), fmtBytes(float64(r.RSSAnon)), r.Threads, r.FDs, r.Children, fmtBytes(float64(r.HeapLive)),
		r.GCs, r.GCAt.Round(time.Millisecond), r.ShutdownTime.Round(time.Millisecond), r.ShutdownLogged.Round(time.Millisecond),
		r.ExitCode, r.Left)
	return r, nil
}

// fillStore creates the SQLite database db with n servers s0000, s0001, ...
// made from base.
func fillStore(ctx context.Context, db string, base *sb.ServerConfig, n int) error {
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	for i := range n {
		c := base.Clone()
		c.Name = fmt.Sprintf("s%04d", i)
		if err := c.Validate(); err != nil {
			st.Close()
			return err
		}
		if _, err := st.Create(ctx, c); err != nil {
			st.Close()
			return err
		}
	}
	return st.Close()
}

// pollConnected polls GET /api/v1/servers every cfg.DaemonPollEvery, and at
// once when the daemon logs that every server started, until all n
// servers are connected or cfg.DaemonTimeout passed. It returns the last
// list, when (since the exec) the first list with all n connected was
// answered (0 if none), and the number of polls.
func pollConnected(ctx context.Context, cfg *Config, d *daemon, n int) ([]sb.ServerView, time.Duration, int) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DaemonTimeout)
	defer cancel()
	tick := time.NewTicker(cfg.DaemonPollEvery)
	defer tick.Stop()
	allStarted := d.allStarted
	var last []sb.ServerView
	for polls := 1; ; polls++ {
		states, err := d.api.Servers(ctx)
		if err == nil {
			last = states
			connected := 0
			for _, s := range states {
				if s.Runtime.Status == sb.StatusConnected {
					connected++
				}
			}
			if len(states) == n && connected == n {
				return states, time.Since(d.Started), polls
			}
		}
		select {
		case <-ctx.Done():
			return last, 0, polls
		case <-allStarted:
			allStarted = nil // once
		case <-tick.C:
		}
	}
}

// sleepCtx sleeps for d, or until ctx ends (then it returns false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
