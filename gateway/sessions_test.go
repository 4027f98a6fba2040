package gateway_test

// The caps on downstream Streamable HTTP sessions: global (503) and per
// client address (429), counted from a successful initialize until the
// session ends by DELETE or the idle timeout; and their metrics.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// noServers is a Source (and a metrics.Source) without servers: sessions
// are counted the same with or without them.
type noServers struct{}

func (noServers) Names() []string                          { return nil }
func (noServers) Session(string) (*upstream.Session, bool) { return nil, false }
func (noServers) Subscribe() (<-chan sb.Event, func())     { return nil, func() {} }
func (noServers) SubscribeNotifications() (<-chan upstream.Notification, func()) {
	return nil, func() {}
}
func (noServers) WaitSettled(context.Context, time.Duration, ...string) error { return nil }
func (noServers) MaxTotalTimeout(string) time.Duration                        { return 0 }
func (noServers) ReleaseClient(string)                                        {}
func (noServers) List() []sb.ServerView                                       { return nil }

// newSessionGateway returns a gateway over no servers, closed when the test
// ends.
func newSessionGateway(t *testing.T, opts gateway.Options) *gateway.Gateway {
	opts.Executor = executor.New()
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	gw := gateway.New(noServers{}, opts)
	t.Cleanup(gw.Close)
	return gw
}

// mcpPost is a JSON-RPC message for /mcp, on session id if not "".
func mcpPost(url, id, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}

const initializeBody = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// answer is one response of the MCP endpoint.
type answer struct {
	status  int
	session string // Mcp-Session-Id
	body    string
}

// doer sends a request to the MCP endpoint.
type doer func(*http.Request) answer

// over sends requests with c, over the network.
func over(c *http.Client) doer {
	return func(req *http.Request) answer {
		resp, err := c.Do(req)
		if err != nil {
			return answer{body: err.Error()}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)}
	}
}

// direct sends requests to h itself, as if from the address remote (a
// synctest bubble has no network).
func direct(h http.Handler, remote string) doer {
	return func(req *http.Request) answer {
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return answer{rec.Code, rec.Header().Get("Mcp-Session-Id"), rec.Body.String()}
	}
}

// open initializes a session at url and fails the test unless it is made.
// The session is deleted when the test ends, if it is still there.
func open(t *testing.T, do doer, url string) string {
	t.Helper()
	a := do(mcpPost(url, "", initializeBody))
	if a.status != http.StatusOK || a.session == "" {
		t.Fatalf("initialize: %d %q, session %q; want 200 and a session", a.status, a.body, a.session)
	}
	t.Cleanup(func() { do(deleteSession(url, a.session)) })
	return a.session
}

func deleteSession(url, id string) *http.Request {
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return req
}

// usable fails the test unless session id answers a ping.
func usable(t *testing.T, do doer, url, id string) {
	t.Helper()
	a := do(mcpPost(url, id, `{"jsonrpc":"2.0","id":8,"method":"ping"}`))
	if a.status != http.StatusOK || !strings.Contains(a.body, `"result":{}`) {
		t.Fatalf("ping on session %s: %d %q", id, a.status, a.body)
	}
}

func closeSession(t *testing.T, do doer, url, id string) {
	t.Helper()
	if a := do(deleteSession(url, id)); a.status != http.StatusNoContent {
		t.Fatalf("DELETE of session %s: %d %q", id, a.status, a.body)
	}
}

// refused fails the test unless a new session at url is refused with
// status, by limit, whose value is max, with the JSON-RPC error answering
// the initialize (id 7).
func refused(t *testing.T, do doer, url string, status int, limit string, max int) {
	t.Helper()
	a := do(mcpPost(url, "", initializeBody))
	if a.status != status || a.session != "" {
		t.Fatalf("initialize over the %s cap: %d %q (session %q), want %d", limit, a.status, a.body, a.session, status)
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int
			Message string
			Data    struct {
				Limit string
				Max   int
			}
		}
	}
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
	wantMsg := fmt.Sprintf("the limit of %d live MCP sessions", max)
	if resp.JSONRPC != "2.0" || string(resp.ID) != "7" || resp.Error.Code != -32000 ||
		resp.Error.Data.Limit != limit || resp.Error.Data.Max != max || !strings.Contains(resp.Error.Message, wantMsg) {
		t.Fatalf("refusal %s, want a JSON-RPC error for id 7 with data {limit: %s, max: %d} and a message saying %q", a.body, limit, max, wantMsg)
	}
}

// With a cap of 3, three sessions are made and work, the fourth is
// refused with 503 while the three still work, and closing one lets one
// more in. A request that makes no session (a ping without one) takes no
// slot. The metrics show the sessions, the cap and the refusals.
func TestSessionsOverTheGlobalCapAreRefusedUntilOneCloses(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessions: 3, MaxSessionsPerAddress: -1, MaxSessionsPerPrincipal: -1})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	do, url := over(srv.Client()), srv.URL+"/mcp"

	var ids []string
	for range 2 {
		ids = append(ids, open(t, do, url))
	}
	if a := do(mcpPost(url, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)); a.status == http.StatusServiceUnavailable {
		t.Fatalf("a ping without a session, with a slot free: %d %q", a.status, a.body)
	}
	ids = append(ids, open(t, do, url))
	refused(t, do, url, http.StatusServiceUnavailable, gateway.LimitGlobal, 3)
	for _, id := range ids {
		usable(t, do, url, id)
	}

	closeSession(t, do, url, ids[1])
	ids[1] = open(t, do, url)
	refused(t, do, url, http.StatusServiceUnavailable, gateway.LimitGlobal, 3)

	want := gateway.SessionStats{Live: 3, MaxSessions: 3, RefusedGlobal: 2}
	if got := gw.SessionStats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	m := metrics.New(noServers{})
	m.ReportSessions(gw)
	scrape := httptest.NewRecorder()
	m.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range []string{
		"switchboard_mcp_sessions 3",
		`switchboard_mcp_sessions_limit{limit="global"} 3`,
		`switchboard_mcp_sessions_refused_total{limit="global"} 2`,
		`switchboard_mcp_sessions_refused_total{limit="per_address"} 0`,
		"switchboard_mcp_sessions_expired_total 0",
	} {
		if !strings.Contains(scrape.Body.String(), "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	if strings.Contains(scrape.Body.String(), `switchboard_mcp_sessions_limit{limit="per_address"}`) {
		t.Error("metrics show a per-address limit; there is none")
	}
}

// Twenty initializes at once under a cap of 5: five sessions are made,
// not more (each request takes its slot before the session exists).
func TestConcurrentInitializesDoNotOvershootTheCap(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessions: 5, MaxSessionsPerAddress: -1})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	do := over(srv.Client())
	statuses := make(map[int]int)
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			a := do(mcpPost(srv.URL+"/mcp", "", initializeBody))
			mu.Lock()
			statuses[a.status]++
			if a.session != "" {
				ids = append(ids, a.session)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, id := range ids {
		t.Cleanup(func() { do(deleteSession(srv.URL+"/mcp", id)) })
	}
	if statuses[http.StatusOK] != 5 || statuses[http.StatusServiceUnavailable] != 15 {
		t.Errorf("statuses %v, want 5 × 200 and 15 × 503", statuses)
	}
	if got := gw.SessionStats(); got.Live != 5 || got.RefusedGlobal != 15 {
		t.Errorf("stats %+v, want 5 live and 15 refused", got)
	}
}

// fromAddr is a client whose connections come from the loopback address ip.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// With a cap of 2 per address, 127.0.0.1 is refused a third session with
// 429 while 127.0.0.2 still gets two; closing one of 127.0.0.1's lets it
// open one more.
func TestSessionsPerAddressCapRefusesOneAddressNotAnother(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessionsPerAddress: 2})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	one, two := fromAddr("127.0.0.1"), fromAddr("127.0.0.2")
	t.Cleanup(one.CloseIdleConnections)
	t.Cleanup(two.CloseIdleConnections)

	first := []string{open(t, over(one), url), open(t, over(one), url)}
	refused(t, over(one), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 2)
	a := over(one)(mcpPost(url, "", initializeBody))
	if !strings.Contains(a.body, "is reached for 127.0.0.1;") {
		t.Errorf("refusal %q does not name the address 127.0.0.1", a.body)
	}
	open(t, over(two), url)
	open(t, over(two), url)
	refused(t, over(two), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 2)
	usable(t, over(one), url, first[0])

	closeSession(t, over(one), url, first[1])
	open(t, over(one), url)
	refused(t, over(one), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 2)

	if got := gw.SessionStats(); got.Live != 4 || got.RefusedPerAddress != 4 || got.RefusedGlobal != 0 || got.MaxSessions != gateway.DefaultMaxSessions {
		t.Errorf("stats %+v, want 4 live, 4 refused per address, the default global cap", got)
	}
}

// Sessions idle for the timeout are closed and their slots freed when
// the timeout fires (no sweep comes later to notice); one in use meanwhile
// keeps its slot. The expired count says how many the timeout closed.
func TestIdleSessionsAreReapedAndFreeTheirSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newSessionGateway(t, gateway.Options{MaxSessions: 2, SessionTimeout: time.Minute})
		do, url := direct(gw.Handler(), "192.0.2.1:4000"), "http://127.0.0.1/mcp"
		idle, busy := open(t, do, url), open(t, do, url)
		refused(t, do, url, http.StatusServiceUnavailable, gateway.LimitGlobal, 2)

		time.Sleep(50 * time.Second)
		usable(t, do, url, busy) // its minute starts again
		time.Sleep(9 * time.Second)
		refused(t, do, url, http.StatusServiceUnavailable, gateway.LimitGlobal, 2) // 59 s: idle is still open

		// idle times out at 60 s, and its slot is free then.
		time.Sleep(time.Second + time.Millisecond)
		third := open(t, do, url)
		refused(t, do, url, http.StatusServiceUnavailable, gateway.LimitGlobal, 2) // busy keeps its slot
		usable(t, do, url, busy)
		a := do(mcpPost(url, idle, `{"jsonrpc":"2.0","id":8,"method":"ping"}`))
		if a.status != http.StatusNotFound {
			t.Errorf("ping on the expired session: %d %q, want 404", a.status, a.body)
		}
		if got := gw.SessionStats(); got.Live != 2 || got.Expired != 1 || got.RefusedGlobal != 3 {
			t.Errorf("stats %+v, want 2 live, 1 expired, 3 refused", got)
		}

		closeSession(t, do, url, busy)
		closeSession(t, do, url, third)
		if got := gw.SessionStats(); got.Live != 0 || got.Expired != 1 {
			t.Errorf("after the DELETEs: stats %+v, want none live, still 1 expired", got)
		}
	})
}

// A session over stdio (`switchboard stdio`, or any in-process transport)
// is not counted: the caps are for Streamable HTTP.
func TestStdioSessionIsNotCounted(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessions: 1})
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := gw.Aggregate().Connect(context.Background(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ide"}, nil).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	if got := gw.SessionStats(); got.Live != 0 {
		t.Errorf("stats %+v with one stdio session, want none live", got)
	}
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	open(t, over(srv.Client()), srv.URL+"/mcp")
}

// The per-address cap counts an IPv6 client by its /64 and an IPv4-mapped
// address as the IPv4 one; a connection without an IP address (a Unix
// socket) is not capped per address.
func TestPerAddressCapCountsIPv6ByItsSlash64(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessionsPerAddress: 1})
	h, url := gw.Handler(), "http://127.0.0.1/mcp"
	for _, tc := range []struct {
		first, second string // remote addresses
		sameAddress   bool
	}{
		{"[2001:db8::1]:4000", "[2001:db8::2]:4000", true},
		{"[2001:db8:0:1::1]:4000", "[2001:db8:0:2::1]:4000", false},
		{"192.0.2.1:4000", "[::ffff:192.0.2.1]:4001", true},
		{"192.0.2.7:4000", "192.0.2.8:4000", false},
		{"@", "@", false},
	} {
		open(t, direct(h, tc.first), url)
		if tc.sameAddress {
			refused(t, direct(h, tc.second), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 1)
		} else {
			open(t, direct(h, tc.second), url)
		}
	}
}

// asPrincipal serves h with the principal its X-Test-Principal header
// names, as httpapi's authentication would.
func asPrincipal(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := sb.Principal{Name: r.Header.Get("X-Test-Principal"), Scopes: []sb.Scope{sb.ScopeMCP}}
		h.ServeHTTP(w, r.WithContext(sb.WithPrincipal(r.Context(), p)))
	})
}

// as sends requests with c as the principal who.
func as(c *http.Client, who string) doer {
	do := over(c)
	return func(req *http.Request) answer {
		req.Header.Set("X-Test-Principal", who)
		return do(req)
	}
}

// One credential that fills its share of an address does not lock another
// out of it (a toolset token opened 256 sessions from 127.0.0.1 and the
// admin got 429), and a credential that moves to other addresses of
// 127.0.0.0/8 is stopped by its own cap, per_principal, shown in the
// metrics.
func TestSessionCapsArePerPrincipalAsWellAsPerAddress(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessionsPerAddress: 2, MaxSessionsPerPrincipal: 3})
	srv := httptest.NewServer(asPrincipal(gw.Handler()))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	one, two, three := fromAddr("127.0.0.1"), fromAddr("127.0.0.2"), fromAddr("127.0.0.3")
	for _, c := range []*http.Client{one, two, three} {
		t.Cleanup(c.CloseIdleConnections)
	}

	open(t, as(one, "ci"), url)
	open(t, as(one, "ci"), url)
	refused(t, as(one, "ci"), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 2)
	admin := open(t, as(one, sb.PrincipalAdmin), url)
	open(t, as(one, sb.PrincipalAdmin), url)
	usable(t, as(one, sb.PrincipalAdmin), url, admin)

	open(t, as(two, "ci"), url)
	refused(t, as(three, "ci"), url, http.StatusTooManyRequests, gateway.LimitPerPrincipal, 3)
	a := as(three, "ci")(mcpPost(url, "", initializeBody))
	if !strings.Contains(a.body, `per credential (per_principal) is reached for \"ci\"`) {
		t.Errorf("refusal %q does not name the credential", a.body)
	}
	open(t, as(three, "other"), url)

	want := gateway.SessionStats{Live: 6, MaxSessions: gateway.DefaultMaxSessions, MaxSessionsPerAddress: 2, MaxSessionsPerPrincipal: 3,
		RefusedPerAddress: 1, RefusedPerPrincipal: 2}
	if got := gw.SessionStats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	m := metrics.New(noServers{})
	m.ReportSessions(gw)
	scrape := httptest.NewRecorder()
	m.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range []string{
		`switchboard_mcp_sessions_limit{limit="per_principal"} 3`,
		`switchboard_mcp_sessions_refused_total{limit="per_principal"} 2`,
	} {
		if !strings.Contains(scrape.Body.String(), "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// A daemon that asks for no credential cannot tell its clients apart:
// the anonymous principal is capped per address only.
func TestAnonymousSessionsAreCappedPerAddressOnly(t *testing.T) {
	gw := newSessionGateway(t, gateway.Options{MaxSessionsPerAddress: 1, MaxSessionsPerPrincipal: 1})
	srv := httptest.NewServer(asPrincipal(gw.Handler()))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	one, two := fromAddr("127.0.0.1"), fromAddr("127.0.0.2")
	t.Cleanup(one.CloseIdleConnections)
	t.Cleanup(two.CloseIdleConnections)
	open(t, as(one, sb.PrincipalAnonymous), url)
	refused(t, as(one, sb.PrincipalAnonymous), url, http.StatusTooManyRequests, gateway.LimitPerAddress, 1)
	open(t, as(two, sb.PrincipalAnonymous), url)
}
