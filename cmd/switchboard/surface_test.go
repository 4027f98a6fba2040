package main

// The daemon's own surface against a hostile client: a real serve, real
// connections from chosen loopback addresses.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// idleWait bounds a wait for serve to close a connection: generous, since
// the machine may be loaded; the tests never assert how soon it closes.
const idleWait = 60 * time.Second

// dialFrom opens a TCP connection to addr (host:port) from the loopback
// address ip, closed when the test ends.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// healthz sends GET /healthz on c, keeping the connection, and returns the
// answer's status, or an error if the connection was closed first.
func healthz(c net.Conn, r *bufio.Reader) (int, error) {
	c.SetDeadline(time.Now().Add(idleWait))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitClosed reads c until serve closes it, and fails the test if it is
// not closed within idleWait or sends anything.
func waitClosed(t *testing.T, what string, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(idleWait))
	n, err := r.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n > 0:
		t.Errorf("%s: serve sent data, want the connection closed", what)
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: still open after %s", what, idleWait)
	case err == nil:
		t.Errorf("%s: a read returned nothing and no error", what)
	}
}

func hostPort(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	return strings.TrimPrefix(d.URL, "http://")
}

// One address that holds its cap of connections open (idle keep-alive
// /healthz ones, the attack that reached the open-file limit) has the
// next one closed at once, while another address is answered, by /healthz
// and the API; /metrics shows the cap and the refusal.
func TestConnectionsPerAddressAreCapped(t *testing.T) {
	const max = 8
	d := startServe(t, daemontest.Options{Args: []string{"--max-connections-per-address", "8"}})
	addr := hostPort(t, d.serve)
	for i := range max {
		c := dialFrom(t, "127.0.0.3", addr)
		if status, err := healthz(c, bufio.NewReader(c)); err != nil || status != http.StatusOK {
			t.Fatalf("connection %d of 127.0.0.3: %d %v, want 200", i+1, status, err)
		}
	}
	over := dialFrom(t, "127.0.0.3", addr)
	r := bufio.NewReader(over)
	if status, err := healthz(over, r); err == nil {
		t.Fatalf("connection %d of 127.0.0.3 was answered %d, want it closed", max+1, status)
	}

	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	t.Cleanup(other.CloseIdleConnections)
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, d.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+d.serve.Token)
		resp, err := other.Do(req)
		if err != nil {
			t.Fatalf("GET %s from 127.0.0.2: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/api/v1/servers"} {
		if status, body := get(path); status != http.StatusOK {
			t.Errorf("GET %s from 127.0.0.2: %d %s, want 200", path, status, body)
		}
	}
	_, scrape := get("/metrics")
	for _, line := range []string{
		`switchboard_http_connections_limit{limit="per_address"} 8`,
		`switchboard_http_connections_refused_total{limit="per_address"} 1`,
		`switchboard_http_idle_timeout_seconds 120`,
	} {
		if !strings.Contains(scrape, "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// With --idle-timeout, a keep-alive connection that sends no next request
// is closed, and so is one that never sends a request; the event stream,
// open longer than that, still delivers.
func TestIdleConnectionsAreClosed(t *testing.T) {
	d := startServe(t, daemontest.Options{Args: []string{"--idle-timeout", "500ms"}})
	addr := hostPort(t, d.serve)

	ctx, cancel := context.WithTimeout(context.Background(), idleWait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.addr+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+d.serve.Token)
	events, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()

	idle := dialFrom(t, "127.0.0.3", addr)
	r := bufio.NewReader(idle)
	if status, err := healthz(idle, r); err != nil || status != http.StatusOK {
		t.Fatalf("GET /healthz: %d %v", status, err)
	}
	silent := dialFrom(t, "127.0.0.3", addr)
	waitClosed(t, "a keep-alive connection after its request", idle, r)
	waitClosed(t, "a connection that sent nothing", silent, bufio.NewReader(silent))

	d.ok(t, "server", "add", "later", "--command", "/bin/true", "--disabled")
	lines := bufio.NewScanner(events.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"later"`) {
			return
		}
	}
	t.Errorf("the event stream ended (%v) before the event of the server added after the idle timeout", lines.Err())
}
