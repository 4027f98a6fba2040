package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/store"
)

const (
	crashWrites  = 1000 // POST /api/v1/servers per run
	crashWorkers = 32   // concurrent writers
	crashKillAt  = 300  // acknowledgements before the SIGKILL
)

// crashConfig is the config written as number i of run: disabled (nothing
// is spawned or dialled), every field set to a value derived from i, half
// stdio and half remote, so that a config that comes back with any field
// missing, truncated or from another server is caught by comparison.
func crashConfig(run, i int) *sb.ServerConfig {
	off := false
	c := &sb.ServerConfig{
		Name:              fmt.Sprintf("run%d-srv%04d", run, i),
		Enabled:           &off,
		StartupTimeoutMS:  int64(1000 + i),
		CallTimeoutMS:     int64(2000 + i),
		MaxTotalTimeoutMS: int64(3000 + i),
		Retry:             &sb.RetryConfig{MaxAttempts: 1 + i%7, DelaysMS: []int64{int64(100 + i), int64(200 + i)}, SlowRetryMS: int64(5000 + i)},
	}
	if i%2 == 0 {
		c.Transport = sb.TransportStdio
		c.Command = fmt.Sprintf("/opt/mcp/server-%d", i)
		c.Args = []string{"--index", fmt.Sprint(i), "--run", fmt.Sprint(run), strings.Repeat("a", i%50)}
		c.Env = map[string]string{"API_KEY": fmt.Sprintf("secret-%d-%d", run, i), "INDEX": fmt.Sprint(i)}
		c.Cwd = fmt.Sprintf("/srv/%d", i)
	} else {
		c.Transport = sb.TransportStreamableHTTP
		c.URL = fmt.Sprintf("https://mcp%d.example.invalid/run%d/mcp", i, run)
		c.Headers = map[string]string{"Authorization": fmt.Sprintf("Bearer token-%d-%d", run, i), "X-Index": fmt.Sprint(i)}
		c.ProtocolVersion = "2025-11-25"
	}
	return c
}

// TestCrashSafetySQLite kills `switchboard serve` on a SQLite database
// with SIGKILL during 1,000 concurrent config writes; see crashSafety.
func TestCrashSafetySQLite(t *testing.T) {
	t.Parallel() // it counts rows, not time; see TestChaosFlappingServerIsBackedOff
	path := filepath.Join(t.TempDir(), "switchboard.db")
	crashSafety(t, "crash_sqlite", "sqlite:"+path, func(ctx context.Context) (sb.Store, error) { return store.Open(ctx, "sqlite:"+path) })
}

// TestCrashSafetyPostgres is the same on a fresh PostgreSQL database.
func TestCrashSafetyPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	crashSafety(t, "crash_postgres", dsn, func(ctx context.Context) (sb.Store, error) { return store.Open(ctx, dsn) })
}

// crashSafety runs the crash-safety scenario on dsn: start serve, fire
// 1,000 POST /api/v1/servers from 32 workers, SIGKILL the process (by pid)
// after 300 acknowledgements, restart it on the same database, and check
// that it opens, that every acknowledged server is there with its whole
// config, and that every server there is whole and valid (one that was
// written but not acknowledged, because the answer was lost with the
// process, is allowed and counted). The long variant repeats this five
// times on the same database, so that later runs start from a database
// that has already survived kills. After the runs, the database is read
// directly through the store as well, which shows the secrets the API
// masks.
func crashSafety(t *testing.T, prefix, dsn string, open func(context.Context) (sb.Store, error)) {
	runs := pick(1, 5)
	// One connection per worker, kept across requests.
	hc := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: crashWorkers},
	}
	defer hc.CloseIdleConnections()
	apiOpts := &client.Options{HTTPClient: hc}

	acked := map[string]*sb.ServerConfig{}   // every acknowledged write, all runs
	written := map[string]*sb.ServerConfig{} // every write attempted, all runs
	var pids []int                           // every daemon started
	serve := daemontest.Options{DB: dsn, StopGrace: 15 * time.Second}
	for run := 1; run <= runs; run++ {
		d := daemontest.Start(t, serve)
		pids = append(pids, d.PID)
		ack, sent := writeUntilKilled(t, prefix, d.Client(apiOpts), d, run)
		d.Kill()
		for _, c := range sent {
			written[c.Name] = c
		}
		for _, c := range ack {
			acked[c.Name] = c
		}

		// Restart on the same database: it must open and serve.
		d = daemontest.Start(t, serve)
		pids = append(pids, d.PID)
		listed := listServers(t, d.Client(apiOpts))
		present, extra := 0, 0
		for _, c := range ack {
			got, ok := listed[c.Name]
			if !ok {
				t.Errorf("run %d: %s was acknowledged (201) but is missing after the restart", run, c.Name)
				continue
			}
			present++
			if want := c.Masked(); !reflect.DeepEqual(got, want) {
				t.Errorf("run %d: %s came back changed:\n got %+v\nwant %+v", run, c.Name, got, want)
			}
		}
		for name, got := range listed {
			want, ok := written[name]
			if !ok {
				t.Errorf("run %d: %s is listed but was never written", run, name)
				continue
			}
			if err := got.Validate(); err != nil {
				t.Errorf("run %d: %s is listed with an invalid config: %v", run, name, err)
			}
			if !reflect.DeepEqual(got, want.Masked()) {
				t.Errorf("run %d: %s is half-written:\n got %+v\nwant %+v", run, name, got, want.Masked())
			}
			if _, ok := acked[name]; !ok {
				extra++
			}
		}
		if err := d.Stop(); err != nil {
			t.Errorf("run %d: %v; stderr:\n%s", run, err, d.Logs())
		}
		figure(t, fmt.Sprintf("%s.run%d.acknowledged", prefix, run), len(ack), "writes")
		figure(t, fmt.Sprintf("%s.run%d.present", prefix, run), present, "writes")
		figure(t, fmt.Sprintf("%s.run%d.extra_unacknowledged", prefix, run), extra, "servers")
		figure(t, fmt.Sprintf("%s.run%d.listed", prefix, run), len(listed), "servers")
	}

	// The store itself: every acknowledged config whole, secrets included.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := open(ctx)
	if err != nil {
		t.Fatalf("opening the store after the runs: %v", err)
	}
	defer st.Close()
	all, err := st.List(ctx)
	if err != nil {
		t.Fatalf("listing the store: %v", err)
	}
	stored := map[string]sb.ServerConfig{}
	for _, s := range all {
		stored[s.Config.Name] = s.Config
		if s.Version != 1 {
			t.Errorf("%s stored at version %d; it was written once", s.Config.Name, s.Version)
		}
	}
	for name, want := range acked {
		got, ok := stored[name]
		if !ok {
			t.Errorf("%s: acknowledged, missing from the store", name)
			continue
		}
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("%s: stored config differs:\n got %+v\nwant %+v", name, got, *want)
		}
	}
	// Nothing of the daemons is left: no process on this database (the
	// DSN is on its command line; a parallel test runs the same binary on
	// another one), and each daemon started here was reaped.
	if live := liveRunning(dsn); len(live) > 0 {
		t.Errorf("switchboard processes still running on %s: %v", dsn, live)
	}
	self := os.Getpid()
	for _, p := range processes() {
		if slices.Contains(pids, p.pid) && p.ppid == self {
			t.Errorf("switchboard pid %d is still a child of the test (state %s)", p.pid, p.state)
		}
	}
	figure(t, prefix+".runs", runs, "runs")
	figure(t, prefix+".stored_total", len(stored), "servers")
	figure(t, prefix+".acknowledged_total", len(acked), "writes")
}

// writeUntilKilled fires crashWrites creates at d from crashWorkers workers
// and kills d with SIGKILL once crashKillAt have been acknowledged; its
// figures go under prefix. It
// returns the acknowledged configs and every config whose request was
// sent (a request may have been committed although its answer was lost).
func writeUntilKilled(t *testing.T, prefix string, c *client.Client, d *daemontest.Daemon, run int) (acked, sent []*sb.ServerConfig) {
	t.Helper()
	next := make(chan int)
	var (
		mu       sync.Mutex
		acks     atomic.Int64
		killOnce sync.Once
		killed   = make(chan struct{})
		refused  atomic.Int64 // answered with an error
		lost     atomic.Int64 // no answer: the process died under it
		wg       sync.WaitGroup
	)
	for range crashWorkers {
		wg.Go(func() {
			for i := range next {
				cfg := crashConfig(run, i)
				mu.Lock()
				sent = append(sent, cfg)
				mu.Unlock()
				var apiErr *client.Error
				if _, err := c.CreateServer(context.Background(), cfg); errors.As(err, &apiErr) {
					refused.Add(1)
					continue
				} else if err != nil {
					lost.Add(1)
					continue
				}
				mu.Lock()
				acked = append(acked, cfg)
				mu.Unlock()
				if acks.Add(1) == crashKillAt {
					killOnce.Do(func() {
						syscall.Kill(d.PID, syscall.SIGKILL)
						close(killed)
					})
				}
			}
		})
	}
	// Feed in a random order, so that what is in flight at the kill is not
	// a neat range of indices. Stop feeding once the process is dead.
	feed := rand.Perm(crashWrites)
	timeout := time.After(60 * time.Second)
feeding:
	for _, i := range feed {
		select {
		case next <- i:
		case <-killed:
			break feeding
		case <-timeout:
			t.Errorf("run %d: writes still going after 60s", run)
			break feeding
		}
	}
	close(next)
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("run %d: only %d of %d writes acknowledged; never reached %d to kill (refused %d, lost %d); stderr:\n%s",
			run, acks.Load(), crashWrites, crashKillAt, refused.Load(), lost.Load(), d.Logs())
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("run %d: %d writes were refused before the kill; stderr:\n%s", run, n, d.Logs())
	}
	figure(t, fmt.Sprintf("%s.run%d.sent", prefix, run), len(sent), "writes")
	figure(t, fmt.Sprintf("%s.run%d.unanswered", prefix, run), lost.Load(), "writes")
	return acked, sent
}

// listServers returns every server the daemon lists, by name, as its
// config (with the secrets masked, as the API shows them).
func listServers(t *testing.T, c *client.Client) map[string]*sb.ServerConfig {
	t.Helper()
	servers, err := c.Servers(context.Background())
	if err != nil {
		t.Fatalf("listing the servers: %v", err)
	}
	out := make(map[string]*sb.ServerConfig, len(servers))
	for _, v := range servers {
		cfg := v.ServerConfig
		out[cfg.Name] = &cfg
	}
	if len(out) != len(servers) {
		t.Errorf("GET /api/v1/servers lists %d servers under %d names", len(servers), len(out))
	}
	if !slices.IsSortedFunc(servers, func(a, b sb.ServerView) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("GET /api/v1/servers is not ordered by name")
	}
	return out
}
