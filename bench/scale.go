package bench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Kinds of the scale scenario.
const (
	ScaleStdio = "stdio"           // one testserver child per session
	ScaleHTTP  = "streamable-http" // every session to one testserver HTTP process
)

// MemSnap is this process's memory and resources at one moment, taken after
// a collection that also returned freed memory to the OS.
type MemSnap struct {
	RSS        uint64 `json:"rss"`         // VmRSS of /proc/self/status
	HeapInuse  uint64 `json:"heap_inuse"`  // runtime.MemStats.HeapInuse
	StackInuse uint64 `json:"stack_inuse"` // runtime.MemStats.StackInuse (goroutine stacks)
	Goroutines int    `json:"goroutines"`
	FDs        int    `json:"fds"`
}

func snapMem() MemSnap {
	debug.FreeOSMemory() // a collection, then freed pages go back to the OS
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return MemSnap{RSS: rssBytes(0), HeapInuse: m.HeapInuse, StackInuse: m.StackInuse,
		Goroutines: runtime.NumGoroutine(), FDs: openFDs()}
}

// ScaleResult is one run of the scale scenario.
type ScaleResult struct {
	Run         int           `json:"run,omitempty"` // which run of a merged report (see Merge)
	Kind        string        `json:"kind"`
	Sessions    int           `json:"sessions"`
	Concurrency int           `json:"concurrency"` // Starts at once
	Connected   int           `json:"connected"`
	FirstError  string        `json:"first_error,omitempty"`
	ConnectTime time.Duration `json:"connect_time"` // from the first Start until every Start returned
	Protocol    string        `json:"protocol"`     // negotiated by the first session

	// The same number of plain go-sdk clients, connected the same number at
	// a time and doing the same work (initialize, then list tools,
	// resources, templates and prompts), before the sessions: what the
	// machine and the servers take without Switchboard.
	BaselineConnectTime time.Duration `json:"baseline_connect_time"`
	BaselineConnected   int           `json:"baseline_connected"`

	Before, After, Closed MemSnap // before New, with every session idle, after Shutdown

	// The servers' memory: the sum over the stdio children, or the one HTTP
	// server process. Not part of Switchboard's figures.
	ServerRSS, ServerPSS uint64

	ShutdownTime time.Duration `json:"shutdown_time"`
	ChildrenLeft int           `json:"children_left"` // children of this process after everything was closed
	GroupsLeft   int           `json:"groups_left"`   // stdio process groups with a process left

	// Profile attributes the heap and goroutines of a smaller set of idle
	// sessions (Config.ScaleProfileSessions), started after the others
	// were shut down; nil if not profiled.
	Profile *ScaleProfile `json:"profile,omitempty"`
}

// ScaleProfile attributes what idle sessions keep: the heap in use, from
// the runtime's memory profile at MemProfileRate 1 (every allocation
// recorded), and the goroutines, by the function each one runs.
type ScaleProfile struct {
	Sessions    int              `json:"sessions"`
	HeapBytes   float64          `json:"heap_bytes"` // in use per session
	HeapObjects float64          `json:"heap_objects"`
	Owners      []AllocShare     `json:"owners"`
	Sites       []AllocShare     `json:"sites"`
	Goroutines  []GoroutineShare `json:"goroutines"`
}

// GoroutineShare is the number of goroutines per session running one
// function (the goroutine's outermost frame).
type GoroutineShare struct {
	Func       string  `json:"func"`
	PerSession float64 `json:"per_session"`
}

// PerSession divides the growth from Before to After by the sessions.
func (r *ScaleResult) PerSession(f func(MemSnap) float64) float64 {
	return (f(r.After) - f(r.Before)) / float64(max(1, r.Sessions))
}

// runScale starts n sessions of kind, cfg.StartConcurrency at a time,
// measures them idle, shuts them all down and checks that nothing is left.
// Before, it connects as many plain go-sdk clients the same way (the
// baseline); after, it profiles a smaller set of sessions.
func runScale(ctx context.Context, cfg *Config, kind string, n int) (*ScaleResult, error) {
	r := &ScaleResult{Kind: kind, Sessions: n, Concurrency: cfg.StartConcurrency}
	var base sb.ServerConfig
	var server *httpServer
	switch kind {
	case ScaleStdio:
		base = sb.ServerConfig{Transport: sb.TransportStdio, Command: cfg.Testserver}
	case ScaleHTTP:
		var err error
		server, err = startHTTPServer(cfg.Testserver)
		if err != nil {
			return nil, err
		}
		defer server.stop()
		base = sb.ServerConfig{Transport: sb.TransportStreamableHTTP, URL: server.url}
	default:
		return nil, fmt.Errorf("unknown scale kind %q", kind)
	}

	var err error
	r.BaselineConnectTime, r.BaselineConnected, err = connectDirectMany(ctx, cfg, &base, n)
	if err != nil {
		return nil, err
	}
	cfg.logf("scale %s baseline: %d/%d plain go-sdk clients connected and listed in %s", kind, r.BaselineConnected, n,
		r.BaselineConnectTime.Round(time.Millisecond))

	r.Before = snapMem()
	sessions, failed, took := startSessions(ctx, cfg, &base, n)
	r.ConnectTime = took
	r.Connected = n - len(failed)
	if len(failed) > 0 {
		r.FirstError = failed[0].Error()
	}
	r.Protocol = sessions[0].Info().ProtocolVersion
	cfg.logf("scale %s: %d/%d connected in %s", kind, r.Connected, n, r.ConnectTime.Round(time.Millisecond))

	time.Sleep(time.Second) // let connection set-up work finish; the sessions are idle from here
	r.After = snapMem()
	var pids []int
	for _, s := range sessions {
		if pid := s.Info().PID; pid > 0 {
			pids = append(pids, pid)
			r.ServerRSS += rssBytes(pid)
			r.ServerPSS += pssBytes(pid)
		}
	}
	if server != nil {
		r.ServerRSS, r.ServerPSS = rssBytes(server.pid), pssBytes(server.pid)
	}
	r.ShutdownTime = shutdownSessions(cfg, sessions)

	if cfg.ScaleProfileSessions > 0 {
		if r.Profile, err = profileSessions(ctx, cfg, &base, cfg.ScaleProfileSessions); err != nil {
			return nil, err
		}
	}

	if server != nil {
		server.stop()
	}
	for _, pid := range pids {
		if groupAlive(pid) {
			r.GroupsLeft++
		}
	}
	r.ChildrenLeft = len(childPIDs())
	r.Closed = snapMem()
	cfg.logf("scale %s: RSS %+.1f KiB/session, heap %+.1f KiB/session, %.1f goroutines/session; shutdown %s; children left %d, groups left %d",
		kind, r.PerSession(func(m MemSnap) float64 { return float64(m.RSS) })/1024,
		r.PerSession(func(m MemSnap) float64 { return float64(m.HeapInuse) })/1024,
		r.PerSession(func(m MemSnap) float64 { return float64(m.Goroutines) }), r.ShutdownTime.Round(time.Millisecond),
		r.ChildrenLeft, r.GroupsLeft)
	return r, nil
}

// parallel runs fn(0..n-1), at most conc at a time, and returns how long
// that took.
func parallel(n, conc int, fn func(i int)) time.Duration {
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
	return time.Since(start)
}

// startSessions creates n sessions from base and starts them,
// cfg.StartConcurrency at a time, each Start bounded by a minute. It
// returns every session (started or not: all must be shut down), the
// failures, and the time until every Start returned.
func startSessions(ctx context.Context, cfg *Config, base *sb.ServerConfig, n int) ([]*upstream.Session, []error, time.Duration) {
	sessions := make([]*upstream.Session, n)
	opts := &upstream.Options{Logger: discardLogger, Egress: egress.NewPolicy(nil), Instance: egress.NewInstance()} // one pool, as serve's
	for i := range sessions {
		c := *base
		c.Name = fmt.Sprintf("s%04d", i)
		sessions[i] = upstream.New(&c, opts)
	}
	var (
		mu     sync.Mutex
		failed []error
	)
	took := parallel(n, cfg.StartConcurrency, func(i int) {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := sessions[i].Start(sctx); err != nil {
			mu.Lock()
			failed = append(failed, fmt.Errorf("%s: %w", sessions[i].Name(), err))
			mu.Unlock()
		}
	})
	return sessions, failed, took
}

// shutdownSessions shuts every session down, 64 at a time, and returns how
// long that took.
func shutdownSessions(cfg *Config, sessions []*upstream.Session) time.Duration {
	return parallel(len(sessions), 64, func(i int) {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sessions[i].Shutdown(sctx); err != nil {
			cfg.logf("scale: %s: shutdown: %v", sessions[i].Name(), err)
		}
	})
}

// connectDirectMany connects n plain go-sdk clients to base's server (a
// process each for stdio), cfg.StartConcurrency at a time, each listing
// tools, resources, templates and prompts as a session's discovery does;
// it returns how long until all were connected, then closes them all.
func connectDirectMany(ctx context.Context, cfg *Config, base *sb.ServerConfig, n int) (time.Duration, int, error) {
	type conn struct {
		cs  *mcp.ClientSession
		pid int
	}
	conns := make([]conn, n)
	var hc *http.Client
	if base.Transport != sb.TransportStdio {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 64 // as Switchboard's shared transport
		hc = &http.Client{Transport: tr}
		defer tr.CloseIdleConnections()
	}
	var connected atomic.Int64
	took := parallel(n, cfg.StartConcurrency, func(i int) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var (
			cs  *mcp.ClientSession
			pid int
			err error
		)
		if base.Transport == sb.TransportStdio {
			cs, pid, err = connectCommand(cctx, base.Command)
		} else {
			cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, nil).
				Connect(cctx, &mcp.StreamableClientTransport{Endpoint: base.URL, HTTPClient: hc}, nil)
		}
		if err != nil {
			return
		}
		conns[i] = conn{cs, pid}
		_, err1 := cs.ListTools(cctx, nil)
		_, err2 := cs.ListResources(cctx, nil)
		_, err3 := cs.ListResourceTemplates(cctx, nil)
		_, err4 := cs.ListPrompts(cctx, nil)
		if errors.Join(err1, err2, err3, err4) == nil {
			connected.Add(1)
		}
	})
	parallel(n, 64, func(i int) {
		switch c := conns[i]; {
		case c.cs == nil:
		case c.pid > 0:
			closeCommand(c.cs, c.pid)
		default:
			_ = c.cs.Close()
		}
	})
	return took, int(connected.Load()), ctx.Err()
}

// profileSessions starts n sessions from base with every allocation
// recorded, and attributes the heap they keep while idle, and their
// goroutines; then shuts them down.
func profileSessions(ctx context.Context, cfg *Config, base *sb.ServerConfig, n int) (*ScaleProfile, error) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()

	var files []string
	before, err := memProfile(cfg, "", &files)
	if err != nil {
		return nil, err
	}
	g0 := goroutineFuncs()
	sessions, failed, _ := startSessions(ctx, cfg, base, n)
	defer shutdownSessions(cfg, sessions)
	if len(failed) > 0 {
		return nil, fmt.Errorf("profiling %d sessions: %w", n, failed[0])
	}
	time.Sleep(time.Second)
	after, err := memProfile(cfg, "", &files)
	if err != nil {
		return nil, err
	}
	g1 := goroutineFuncs()

	p := &ScaleProfile{Sessions: n}
	p.Owners, p.Sites, _, p.HeapBytes, p.HeapObjects = attribute(before, after, inUse, float64(n))
	for fn, c := range g1 {
		if d := c - g0[fn]; d > 0 {
			p.Goroutines = append(p.Goroutines, GoroutineShare{Func: fn, PerSession: float64(d) / float64(n)})
		}
	}
	slices.SortFunc(p.Goroutines, func(a, b GoroutineShare) int {
		if c := cmp.Compare(b.PerSession, a.PerSession); c != 0 {
			return c
		}
		return strings.Compare(a.Func, b.Func)
	})
	return p, nil
}

// goroutineFuncs counts this process's goroutines by the function each runs
// (the outermost frame of its stack below runtime.goexit).
func goroutineFuncs() map[string]int {
	var recs []runtime.StackRecord
	for range 10 {
		n, _ := runtime.GoroutineProfile(nil)
		recs = make([]runtime.StackRecord, n+64)
		n, ok := runtime.GoroutineProfile(recs)
		if ok {
			recs = recs[:n]
			break
		}
		recs = nil
	}
	out := map[string]int{}
	for _, r := range recs {
		frames := runtime.CallersFrames(r.Stack())
		var last string
		for {
			f, more := frames.Next()
			if f.Function != "" && f.Function != "runtime.goexit" {
				last = f.Function
			}
			if !more {
				break
			}
		}
		out[shortFunc(last)]++
	}
	return out
}

// httpServer is a process serving HTTP on 127.0.0.1: a testserver
// serving Streamable HTTP, or the floor relay.
type httpServer struct {
	url  string // its MCP endpoint
	pid  int    // also its process group
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
	once sync.Once
}

// startHTTPServer starts bin with -transport http on an ephemeral loopback
// port, in its own process group, and waits up to 10 s for its LISTEN line.
func startHTTPServer(bin string) (*httpServer, error) {
	s, err := startListener(bin, "-transport", "http", "-listen", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the HTTP testserver: %w", err)
	}
	s.url += "/mcp"
	return s, nil
}

// startListener starts bin with args in its own process group and waits
// up to 10 s for the "LISTEN URL" line it prints on stdout once it serves.
func startListener(bin string, args ...string) (*httpServer, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &httpServer{pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
				select {
				case listening <- u:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-read // every read of stdout is done before Wait closes it
		_ = cmd.Wait()
		close(s.done)
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case u := <-listening:
		s.url = u
		return s, nil
	case <-s.done:
		return nil, errors.New("it exited before listening")
	case <-t.C:
		s.stop()
		return nil, errors.New("it printed no LISTEN line within 10s")
	}
}

// stop kills the server's process group and waits until it is reaped.
func (s *httpServer) stop() {
	s.once.Do(func() {
		killGroup(s.pid)
		<-s.done
	})
}
