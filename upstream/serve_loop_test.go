package upstream_test

// switchboard serve as a real process (internal/daemontest), configured
// to use itself, or another serve that uses it: the remote session must
// end in a loop error instead of feeding on its own tools.

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// startServe starts `switchboard serve` built for this test (into its
// TempDir: this package's TestMain cleans up after testserver only) with
// the extra serve arguments.
func startServe(t *testing.T, args ...string) (*daemontest.Daemon, *client.Client) {
	t.Helper()
	bin, err := daemontest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Options{Binary: bin, Args: args})
	c := d.Client(nil)
	t.Cleanup(c.Close)
	return d, c
}

// settle waits up to 30 s for server's runtime to satisfy pred, and
// returns it.
func settle(t *testing.T, c *client.Client, server, what string, pred func(sb.RuntimeInfo) bool) sb.RuntimeInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := c.Server(context.Background(), server)
		if err == nil && pred(v.Runtime) {
			return v.Runtime
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within 30 s: %v; runtime %+v, error %+v", server, what, err, v.Runtime, v.Runtime.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric returns the value of an unlabelled metric in serve's /metrics.
func metric(t *testing.T, c *client.Client, name string) float64 {
	t.Helper()
	text, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, ok := client.MetricValue(text, name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

func stdioTestServer(t *testing.T, name string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: testserver.Binary(t)}
}

func remote(name, url, token string) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportRemote, URL: url,
		Headers: map[string]string{"Authorization": "Bearer " + token}}
}

// TestServePointedAtItsOwnMCPRefusesTheLoop: A→A. A server whose URL is
// serve's own /mcp (with serve's credential) used to list serve's tools,
// its own included, again on every list_changed: 90 tools became 498 in
// 90 s, with a core busy and 1.2 GB. Now the session ends in status error
// with code loop after one attempt; the other servers keep their tools,
// and serve does no further work for it: a couple of seconds later, no
// new attempt, no new goroutines, next to no CPU.
func TestServePointedAtItsOwnMCPRefusesTheLoop(t *testing.T) {
	d, c := startServe(t)
	ctx := context.Background()
	if _, err := c.CreateServer(ctx, stdioTestServer(t, "other")); err != nil {
		t.Fatal(err)
	}
	tools := settle(t, c, "other", "connected", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected }).ToolCount

	if _, err := c.CreateServer(ctx, remote("self", d.MCPURL, d.Token)); err != nil {
		t.Fatal(err)
	}
	self := settle(t, c, "self", "in error", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusError || r.ToolCount > 0 })
	if self.Status != sb.StatusError || self.Error.Code != sb.CodeLoop || self.Error.Phase != sb.PhaseConfig ||
		!strings.Contains(self.Error.Message, "Switchboard itself") || self.NextRetryAt != nil {
		t.Fatalf("self: status %s with %d tools, error %+v; want error, code loop in phase config, no retry", self.Status, self.ToolCount, self.Error)
	}
	t.Logf("self: %s", self.Error.Message)

	goroutines, cpu := metric(t, c, "go_goroutines"), metric(t, c, "process_cpu_seconds_total")
	time.Sleep(2 * time.Second)
	if again, _ := c.Server(ctx, "self"); again.Runtime.Status != sb.StatusError || again.Runtime.Attempt != self.Attempt {
		t.Errorf("self after 2 s: status %s, attempt %d (was %d)", again.Runtime.Status, again.Runtime.Attempt, self.Attempt)
	}
	all, err := c.Tools(ctx)
	if err != nil || len(all) != tools {
		t.Errorf("%d tools in all (%v); want the other server's %d", len(all), err, tools)
	}
	g2, cpu2 := metric(t, c, "go_goroutines"), metric(t, c, "process_cpu_seconds_total")
	t.Logf("over 2 s: goroutines %g -> %g, CPU %.2f s", goroutines, g2, cpu2-cpu)
	if g2 > goroutines+10 || cpu2-cpu > 1 {
		t.Errorf("serve kept working over 2 s: goroutines %g -> %g, CPU %.2f s", goroutines, g2, cpu2-cpu)
	}
	if n := strings.Count(d.Logs(), "server=self reason=attempt_failed"); n != 1 {
		t.Errorf("%d failed attempts of self logged; want 1", n)
	}
}

// TestServesUsingEachOtherRefuseTheLoop: A→B→A. A uses B's /mcp, then B
// is given A's: B's requests name A (which uses B), so A refuses them; B's
// session ends with code loop, and A keeps B's own tools, no more.
func TestServesUsingEachOtherRefuseTheLoop(t *testing.T) {
	a, ca := startServe(t)
	b, cb := startServe(t)
	ctx := context.Background()
	if _, err := cb.CreateServer(ctx, stdioTestServer(t, "t")); err != nil {
		t.Fatal(err)
	}
	tools := settle(t, cb, "t", "connected", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected }).ToolCount
	if _, err := ca.CreateServer(ctx, remote("b", b.MCPURL, b.Token)); err != nil {
		t.Fatal(err)
	}
	settle(t, ca, "b", "connected with B's tools", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected && r.ToolCount == tools })

	if _, err := cb.CreateServer(ctx, remote("a", a.MCPURL, a.Token)); err != nil {
		t.Fatal(err)
	}
	ra := settle(t, cb, "a", "in error", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusError || r.ToolCount > 0 })
	if ra.Status != sb.StatusError || ra.Error.Code != sb.CodeLoop {
		t.Fatalf("B's server a: status %s with %d tools, error %+v; want error with code loop", ra.Status, ra.ToolCount, ra.Error)
	}
	time.Sleep(2 * time.Second)
	if v, err := ca.Server(ctx, "b"); err != nil || v.Runtime.Status != sb.StatusConnected || v.Runtime.ToolCount != tools {
		t.Errorf("A's server b after 2 s: %v, status %s with %d tools; want connected with B's %d", err, v.Runtime.Status, v.Runtime.ToolCount, tools)
	}
}

// TestServeAllowsTheUpstreamNetworksItIsTold: serve refuses a server at
// an address that is blocked by default (0.0.0.0 here, which reaches a
// server on this host's loopback), and --allow-upstream-network lets it
// through.
func TestServeAllowsTheUpstreamNetworksItIsTold(t *testing.T) {
	srv := inProcessServer(t)
	ts := serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}).ServeHTTP)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	cfg := &sb.ServerConfig{Name: "any", Transport: sb.TransportStreamableHTTP, URL: "http://0.0.0.0:" + port + "/mcp"}
	ctx := context.Background()

	_, c := startServe(t)
	if _, err := c.CreateServer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r := settle(t, c, "any", "refused", func(r sb.RuntimeInfo) bool { return r.Status != sb.StatusConnecting })
	if r.Status != sb.StatusError || r.Error.Code != sb.CodeBlockedAddress || !strings.Contains(r.Error.Message, "--allow-upstream-network") {
		t.Fatalf("by default: status %s, error %+v; want blocked_address naming the flag", r.Status, r.Error)
	}

	_, c = startServe(t, "--allow-upstream-network", "0.0.0.0/32")
	if _, err := c.CreateServer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	settle(t, c, "any", "connected", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected })
}

// TestForgedViaStopsNothing: A fronts B (A's server b is B's /mcp). A
// client of A with an mcp token sends a request naming B in its
// Switchboard-Via: B's id is no secret (B names itself in every request it
// sends, here to a recorder). That used to make A name B in its own
// requests, so that B refused them and A's server b stopped with code loop,
// restarts failing for 10 minutes. Now A learns nothing from the request:
// b reconnects at once after a restart, with B's tools.
func TestForgedViaStopsNothing(t *testing.T) {
	a, ca := startServe(t)
	b, cb := startServe(t)
	ctx := context.Background()
	ids := make(chan string, 1)
	recorder := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case ids <- strings.TrimSpace(strings.Split(r.Header.Get(egress.ViaHeader), ",")[0]):
		default:
		}
		http.NotFound(w, r)
	})
	if _, err := cb.CreateServer(ctx, stdioTestServer(t, "t")); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.CreateServer(ctx, &sb.ServerConfig{Name: "recorder", Transport: sb.TransportStreamableHTTP, URL: recorder.URL}); err != nil {
		t.Fatal(err)
	}
	bID := <-ids
	tools := settle(t, cb, "t", "connected", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected }).ToolCount
	if _, err := ca.CreateServer(ctx, remote("b", b.MCPURL, b.Token)); err != nil {
		t.Fatal(err)
	}
	before := settle(t, ca, "b", "connected with B's tools", func(r sb.RuntimeInfo) bool { return r.Status == sb.StatusConnected && r.ToolCount == tools })

	tok, err := ca.CreateToken(ctx, "attacker", []sb.Scope{sb.ScopeMCP})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/mcp", "/mcp/b"} {
		req, _ := http.NewRequest(http.MethodPost, a.URL+path, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		req.Header.Set(egress.ViaHeader, bID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		t.Logf("forged request to %s: HTTP %d", path, resp.StatusCode)
	}
	if err := ca.RestartServer(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	rb := settle(t, ca, "b", "connected again, or stopped", func(r sb.RuntimeInfo) bool {
		return r.Status == sb.StatusError || r.Status == sb.StatusConnected && r.ToolCount == tools &&
			r.ConnectedSince != nil && !r.ConnectedSince.Equal(*before.ConnectedSince)
	})
	if rb.Status != sb.StatusConnected {
		t.Fatalf("A's server b after a forged Via and a restart: status %s, error %+v; want connected", rb.Status, rb.Error)
	}
}
