package reliability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// replicaCount is how many serve processes share the database.
const replicaCount = 3

// lbProxy is the load balancer of the replica tests: a reverse proxy on
// 127.0.0.1 that sends each request without an MCP session to the next
// live backend in turn, and each request of a session to the backend that
// created it (as a real balancer must, since a legacy Streamable HTTP
// session lives in one process). A session whose backend is gone goes to
// the next one, which answers 404: the client starts a new session.
type lbProxy struct {
	srv *httptest.Server

	mu       sync.Mutex
	backends []*url.URL // nil while down
	next     int
	sessions map[string]string // Mcp-Session-Id → backend host
	lastHost string            // the backend of the latest session
}

func startLB(t *testing.T, urls []string) *lbProxy {
	t.Helper()
	p := &lbProxy{backends: make([]*url.URL, len(urls)), sessions: map[string]string{}}
	for i, u := range urls {
		p.set(i, u)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.pick(pr.In.Header.Get("Mcp-Session-Id")))
		},
		ModifyResponse: func(resp *http.Response) error {
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				p.mu.Lock()
				p.sessions[id] = resp.Request.URL.Host
				p.lastHost = resp.Request.URL.Host
				p.mu.Unlock()
			}
			return nil
		},
		FlushInterval: -1, // SSE responses stream
		// The streams cut by the kill are expected; the calls count them.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "bad gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	return p
}

// set makes backend i the replica at u; "" takes it out of rotation.
func (p *lbProxy) set(i int, u string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u == "" {
		p.backends[i] = nil
		return
	}
	parsed, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	p.backends[i] = parsed
}

// sessionBackend returns the index of the backend that holds the latest
// legacy session, or -1.
func (p *lbProxy) sessionBackend() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.backends {
		if b != nil && b.Host == p.lastHost {
			return i
		}
	}
	return -1
}

func (p *lbProxy) pick(session string) *url.URL {
	p.mu.Lock()
	defer p.mu.Unlock()
	if host, ok := p.sessions[session]; ok && session != "" {
		for _, b := range p.backends {
			if b != nil && b.Host == host {
				return b
			}
		}
	}
	for range len(p.backends) {
		b := p.backends[p.next%len(p.backends)]
		p.next++
		if b != nil {
			return b
		}
	}
	return &url.URL{Scheme: "http", Host: "127.0.0.1:1"} // none up: 502
}

// bearerRT sends the replicas' shared credential.
type bearerRT struct {
	token string
	next  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// replicaSet is replicaCount serve processes on one PostgreSQL database,
// sharing one credential, behind an lbProxy.
type replicaSet struct {
	t     *testing.T
	dsn   string
	token string
	mu    sync.Mutex
	ds    []*daemontest.Daemon
	lb    *lbProxy
	hc    *http.Client // sends the credential; closed by a cleanup
}

func startReplicas(t *testing.T) *replicaSet {
	t.Helper()
	tok := make([]byte, 16)
	rand.Read(tok)
	rs := &replicaSet{t: t, dsn: pgtest.NewDatabase(t), token: hex.EncodeToString(tok)}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	rs.hc = &http.Client{Transport: bearerRT{token: rs.token, next: tr}, Timeout: 30 * time.Second}
	urls := make([]string, replicaCount)
	rs.ds = make([]*daemontest.Daemon, replicaCount)
	for i := range replicaCount {
		rs.ds[i] = rs.start(i)
		urls[i] = rs.ds[i].URL
	}
	rs.lb = startLB(t, urls)
	return rs
}

// start starts replica i: the same database, credential and id as before.
func (rs *replicaSet) start(i int) *daemontest.Daemon {
	return daemontest.Start(rs.t, daemontest.Options{DB: rs.dsn, Token: rs.token,
		Args: []string{"--replica-id", fmt.Sprintf("r%d", i)}})
}

func (rs *replicaSet) daemon(i int) *daemontest.Daemon {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.ds[i]
}

// api is a client of replica i (or of the balancer if i < 0).
func (rs *replicaSet) api(i int) *client.Client {
	u := rs.lb.srv.URL
	if i >= 0 {
		u = rs.daemon(i).URL
	}
	c, err := client.New(u, rs.token, &client.Options{HTTPClient: rs.hc})
	if err != nil {
		rs.t.Fatal(err)
	}
	return c
}

// restart kills replica i with SIGKILL (its process group; the stdio
// servers it spawned, in groups of their own, are killed by pid), keeps
// it out of the balancer for down, and starts it again.
func (rs *replicaSet) restart(i int, down time.Duration) {
	d := rs.daemon(i)
	var pids []int
	if views, err := rs.api(i).Servers(context.Background()); err == nil {
		for _, v := range views {
			if v.Runtime.PID > 0 {
				pids = append(pids, v.Runtime.PID)
			}
		}
	}
	d.Kill()
	rs.lb.set(i, "")
	killOrphans(pids)
	time.Sleep(down)
	nd := rs.start(i)
	rs.mu.Lock()
	rs.ds[i] = nd
	rs.mu.Unlock()
	rs.lb.set(i, nd.URL)
}

// killOrphans waits up to 2 s for the stdio servers of a killed serve to
// exit (their stdin closed), then kills those left, by pid.
func killOrphans(pids []int) {
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// versionsOf is what replica i runs: every server's name and version.
func (rs *replicaSet) versionsOf(i int) (map[string]int64, error) {
	views, err := rs.api(i).Servers(context.Background())
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(views))
	for _, v := range views {
		out[v.Name] = v.Version
	}
	return out, nil
}

// converged waits up to limit for every replica to run the same servers at
// the same versions, and returns them.
func (rs *replicaSet) converged(limit time.Duration) (map[string]int64, error) {
	deadline := time.Now().Add(limit)
	for {
		var all []map[string]int64
		var err error
		for i := range replicaCount {
			var v map[string]int64
			if v, err = rs.versionsOf(i); err != nil {
				break
			}
			all = append(all, v)
		}
		if err == nil && equalAll(all) {
			return all[0], nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the replicas differ after %v: %s", limit, diffReplicas(all))
			}
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func equalAll(ms []map[string]int64) bool {
	for _, m := range ms[1:] {
		if len(m) != len(ms[0]) {
			return false
		}
		for k, v := range ms[0] {
			if w, ok := m[k]; !ok || w != v {
				return false
			}
		}
	}
	return true
}

func diffReplicas(ms []map[string]int64) string {
	names := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			names[k] = true
		}
	}
	var b strings.Builder
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		var vs []string
		differ := false
		for _, m := range ms {
			v, ok := m[n]
			if !ok {
				vs = append(vs, "-")
			} else {
				vs = append(vs, fmt.Sprint(v))
			}
			if m[n] != ms[0][n] {
				differ = true
			}
		}
		if differ {
			fmt.Fprintf(&b, "%s: %s; ", n, strings.Join(vs, " "))
		}
	}
	return b.String()
}

func echoConfig(t *testing.T, name string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t), ProtocolVersion: "2025-11-25"}
}

// cfgServer is a disabled server of the config workload (nothing is
// spawned); gen makes each write's config differ.
func cfgServer(name string, gen int) *sb.ServerConfig {
	off := false
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "/opt/mcp/" + name,
		Enabled: &off, CallTimeoutMS: int64(1000 + gen)}
}

// waitConnected waits until every replica runs name connected.
func (rs *replicaSet) waitConnected(name string, limit time.Duration) {
	rs.t.Helper()
	deadline := time.Now().Add(limit)
	for i := range replicaCount {
		for {
			v, err := rs.api(i).Server(context.Background(), name)
			if err == nil && v.Runtime.Status == sb.StatusConnected {
				break
			}
			if time.Now().After(deadline) {
				rs.t.Fatalf("replica %d: %s not connected within %v: %+v, %v", i, name, limit, v.Runtime, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestReplicasConverge runs three replicas on one PostgreSQL behind a
// round-robin balancer, under a mixed workload (config writes through the
// balancer, tool calls through /mcp in both protocol generations), while
// one replica is killed with SIGKILL and restarted and every connection to
// PostgreSQL is terminated once. Nothing acknowledged may be lost, every
// replica must converge to the same servers and versions, and the calls
// may fail only in the bounded, typed ways a balancer in front of a dying
// process explains. It also measures how soon a write through one replica
// is live on the others, and calls/s through three replicas against one.
func TestReplicasConverge(t *testing.T) {
	rs := startReplicas(t)
	ctx := context.Background()
	if _, err := rs.api(0).CreateServer(ctx, echoConfig(t, "echo")); err != nil {
		t.Fatal(err)
	}
	rs.waitConnected("echo", 20*time.Second)

	measurePropagation(t, rs)
	measureThroughput(t, rs)
	checkForeignSession(t, rs)

	// The mixed workload.
	duration := pick(6*time.Second, 60*time.Second)
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		models [2]*writeModel
		calls  [2]*callTally // stateless, legacy
	)
	for w := range models {
		models[w] = &writeModel{prefix: fmt.Sprintf("w%d-", w), state: map[string]int64{}, uncertain: map[string]bool{}}
		wg.Go(func() { models[w].run(rs.api(-1), &stop) })
	}
	for g := range calls {
		calls[g] = &callTally{failed: map[string]int{}}
	}
	for c := range 4 {
		legacy := c%2 == 1
		wg.Go(func() { callLoop(rs, legacy, c, calls[c%2], &stop) })
	}
	time.Sleep(duration / 3)
	// The replica of a legacy session, so that the kill cuts one.
	victim := rs.lb.sessionBackend()
	if victim < 0 {
		victim = 1
	}
	rs.restart(victim, 500*time.Millisecond)
	t.Logf("replica %d killed and restarted", victim)
	time.Sleep(duration / 3)
	terminatePostgres(t, rs.dsn)
	t.Log("every PostgreSQL connection terminated")
	time.Sleep(duration / 3)
	stop.Store(true)
	wg.Wait()

	final, err := rs.converged(15 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost, checked := 0, 0
	for _, m := range models {
		for name, v := range m.state {
			if m.uncertain[name] {
				continue
			}
			checked++
			if got, ok := final[name]; (v == 0 && ok) || (v != 0 && got != v) {
				lost++
				if lost <= 5 {
					t.Errorf("%s: acknowledged at version %d (0: deleted), the replicas run %d (present %v)", name, v, got, ok)
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, checked)
	}
	acks, unsure := 0, 0
	for _, m := range models {
		acks += m.acks
		unsure += len(m.uncertain)
		for k, n := range m.failed {
			figure(t, "replicas.writes_failed_"+k, n, "writes")
		}
	}
	figure(t, "replicas.writes_acknowledged", acks, "writes")
	figure(t, "replicas.servers_checked", checked, "servers")
	figure(t, "replicas.servers_uncertain", unsure, "servers")
	calls[0].report(t, "replicas.stateless")
	calls[1].report(t, "replicas.legacy")

	// Which replica it is, and when it last synchronised.
	for i := range replicaCount {
		text, err := rs.api(i).Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`switchboard_replica_info{id="r%d"} 1`, i); !strings.Contains(text, want) {
			t.Errorf("replica %d's metrics lack %s", i, want)
		}
		if !strings.Contains(text, "switchboard_replica_last_sync_timestamp_seconds 1.") {
			t.Errorf("replica %d's metrics lack a last sync time", i)
		}
	}
}

// writeModel is one writer's acknowledged view of its servers: name →
// version (0: deleted). A write whose answer was lost (the replica died,
// the connection to PostgreSQL was cut) may or may not have happened: its
// server is uncertain and not compared.
type writeModel struct {
	prefix    string
	state     map[string]int64
	uncertain map[string]bool
	acks      int
	failed    map[string]int
}

func (m *writeModel) run(c *client.Client, stop *atomic.Bool) {
	m.failed = map[string]int{}
	ctx := context.Background()
	var live []string
	for i := 0; !stop.Load(); i++ {
		var name string
		var err error
		var version int64
		op := mrand.IntN(4)
		switch {
		case op <= 1 || len(live) == 0: // create
			name = fmt.Sprintf("%s%04d", m.prefix, i)
			var v sb.ServerView
			v, err = c.CreateServer(ctx, cfgServer(name, i))
			version = v.Version
			if err == nil {
				live = append(live, name)
			}
		case op == 2: // update
			name = live[mrand.IntN(len(live))]
			var v sb.ServerView
			v, err = c.UpdateServer(ctx, name, cfgServer(name, i), m.state[name])
			version = v.Version
		default: // delete
			j := mrand.IntN(len(live))
			name = live[j]
			err = c.DeleteServer(ctx, name, m.state[name])
			if err == nil {
				live = slices.Delete(live, j, j+1)
			}
		}
		if err != nil {
			m.failed[writeErrorKind(err)]++
			// The write may have happened: stop writing this server.
			m.uncertain[name] = true
			if k := slices.Index(live, name); k >= 0 {
				live = slices.Delete(live, k, k+1)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		m.acks++
		m.state[name] = version
	}
}

// writeErrorKind names a failed write: the API's error code, or what kept
// the request from an answer.
func writeErrorKind(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d_%s", ae.Status, ae.Code)
	}
	return "no_answer"
}

// callTally counts the outcomes of MCP calls by kind.
type callTally struct {
	mu       sync.Mutex
	ok       int
	wrong    int
	failed   map[string]int
	untyped  []string
	sessions int
}

func (c *callTally) add(kind, sample string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case "ok":
		c.ok++
	case "wrong":
		c.wrong++
	default:
		c.failed[kind]++
		if kind == "untyped" && len(c.untyped) < 5 {
			c.untyped = append(c.untyped, sample)
		}
	}
}

func (c *callTally) report(t *testing.T, prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	figure(t, prefix+".calls_ok", c.ok, "calls")
	figure(t, prefix+".sessions", c.sessions, "sessions")
	n := 0
	for k, v := range c.failed {
		figure(t, prefix+".calls_failed_"+k, v, "calls")
		n += v
	}
	if c.ok == 0 {
		t.Errorf("%s: no call succeeded", prefix)
	}
	if c.wrong > 0 {
		t.Errorf("%s: %d calls returned another call's answer, or none", prefix, c.wrong)
	}
	if len(c.untyped) > 0 {
		t.Errorf("%s: %d calls failed in an unexpected way, e.g.:\n%s", prefix, c.failed["untyped"], strings.Join(c.untyped, "\n"))
	}
	// Bounded: the calls in flight on the killed replica, and each caller's
	// next attempts until the balancer took it out.
	if n > 50 {
		t.Errorf("%s: %d failed calls; the failures are not bounded by the one kill", prefix, n)
	}
}

// callKind classifies a call's outcome. The expected failures are those a
// replica dying behind the balancer causes: the balancer's 502 for a
// request in flight to it (or sent before it was taken out), and, for a
// legacy session that lived on it, its lost SSE stream and the 404 of
// another replica, which the go-sdk reports as ErrSessionMissing.
func callKind(res *mcp.CallToolResult, err error, want string) string {
	switch {
	case err == nil && (res == nil || res.IsError || len(res.Content) == 0):
		return "wrong"
	case err == nil:
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want {
			return "wrong"
		}
		return "ok"
	case errors.Is(err, mcp.ErrSessionMissing):
		return "session_missing"
	case strings.Contains(err.Error(), "Bad Gateway") || strings.Contains(err.Error(), "bad gateway"):
		return "bad_gateway"
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_closed"
	case strings.Contains(err.Error(), "retries without progress"):
		// The legacy session's standalone SSE stream (GET) ended with its
		// replica and is not resumed (MaxRetries -1); the go-sdk v1.8.0
		// reports it with an untyped error, matched by its text here.
		return "stream_lost"
	default:
		return "untyped"
	}
}

// callLoop calls echo through the balancer's /mcp until stop, in a
// stateless (2026-07-28) or a legacy (2025-11-25, a session) client; after
// a failure it starts a new client session, as a client would.
func callLoop(rs *replicaSet, legacy bool, id int, tally *callTally, stop *atomic.Bool) {
	ctx := context.Background()
	var o *mcp.ClientSessionOptions
	if legacy {
		o = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	for i := 0; !stop.Load(); i++ {
		if cs == nil {
			c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("caller%d", id)}, nil)
			var err error
			cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.lb.srv.URL + "/mcp", HTTPClient: rs.hc, MaxRetries: -1}, o)
			if err != nil {
				cs = nil
				tally.add(callKind(nil, err, ""), "connect: "+err.Error())
				time.Sleep(20 * time.Millisecond)
				continue
			}
			tally.mu.Lock()
			tally.sessions++
			tally.mu.Unlock()
		}
		want := fmt.Sprintf("caller %d call %d", id, i)
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": want}})
		cancel()
		kind := callKind(res, err, want)
		sample := ""
		if err != nil {
			sample = fmt.Sprintf("%T: %v", err, err)
		}
		tally.add(kind, sample)
		if kind != "ok" && kind != "wrong" {
			cs.Close()
			cs = nil
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// terminatePostgres cuts every connection to the database but its own.
func terminatePostgres(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	figure(t, "replicas.pg_connections_terminated", n, "connections")
}

// measurePropagation writes through each replica in turn and measures how
// long the write takes to be visible (GET /api/v1/servers/NAME) on the
// other two. Polling every 2 ms bounds the resolution.
func measurePropagation(t *testing.T, rs *replicaSet) {
	ctx := context.Background()
	var lat []time.Duration
	for round := range pick(15, 60) {
		from := round % replicaCount
		name := fmt.Sprintf("lat-%03d", round)
		if _, err := rs.api(from).CreateServer(ctx, cfgServer(name, round)); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		for i := range replicaCount {
			if i == from {
				continue
			}
			c := rs.api(i)
			for {
				if _, err := c.Server(ctx, name); err == nil {
					lat = append(lat, time.Since(written))
					break
				}
				if time.Since(written) > 10*time.Second {
					t.Fatalf("%s written through replica %d is not on replica %d after 10s", name, from, i)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	figure(t, "replicas.propagation_p50", quantile(lat, 0.5), "ms")
	figure(t, "replicas.propagation_max", quantile(lat, 1), "ms")
}

// measureThroughput reports echo calls/s through the balancer (three
// replicas) and to one replica directly, each with the same stateless
// callers for the same time. A figure, not an assertion.
func measureThroughput(t *testing.T, rs *replicaSet) {
	run := func(endpoint string) float64 {
		const callers = 8
		d := pick(1500*time.Millisecond, 5*time.Second)
		var n atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(d)
		for g := range callers {
			wg.Go(func() {
				c := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)
				cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: rs.hc}, nil)
				if err != nil {
					t.Errorf("connect: %v", err)
					return
				}
				defer cs.Close()
				for i := 0; time.Now().Before(deadline); i++ {
					want := fmt.Sprintf("%d-%d", g, i)
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": want}})
					if callKind(res, err, want) == "ok" {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return float64(n.Load()) / d.Seconds()
	}
	figure(t, "replicas.calls_per_second_one_replica", run(rs.daemon(0).MCPURL), "calls/s")
	figure(t, "replicas.calls_per_second_three_replicas", run(rs.lb.srv.URL+"/mcp"), "calls/s")
}

// checkForeignSession: a legacy session created on one replica is unknown
// to another, which answers 404 with a plain "session not found", the
// go-sdk handler's answer, which its client turns into ErrSessionMissing
// and a new initialize.
func checkForeignSession(t *testing.T, rs *replicaSet) {
	c := mcp.NewClient(&mcp.Implementation{Name: "sticky"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: rs.daemon(0).MCPURL, HTTPClient: rs.hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, err := http.NewRequest(http.MethodPost, rs.daemon(1).MCPURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := rs.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(got), "session not found") {
		t.Errorf("another replica answered the session with %d %q, want 404 \"session not found\"", resp.StatusCode, got)
	}
}
