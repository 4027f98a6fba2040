package gateway_test

// Tests of the first look at the servers (a list, or a call of a tool not
// listed yet, waits for the servers still making their first attempt,
// within Options.ReadyTimeout) and of the list_changed notifications that
// the servers' startups cause. The first half runs real server processes
// over HTTP; the second runs in-process servers in testing/synctest
// bubbles, where the times are exact.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// listToolNames lists the tools once (every page), sorted.
func listToolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	names := []string{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// countListChanged returns client options that count the
// tools/list_changed notifications the client receives.
func countListChanged(n *atomic.Int32) *mcp.ClientOptions {
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) }}
}

func TestFirstListOverHTTPShowsServersStillStarting(t *testing.T) {
	var servers []*sb.ServerConfig
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		servers = append(servers, stdio(t, name, "-startup-delay", fmt.Sprintf("%dms", 300+100*i)))
		want = append(want, name+"__echo")
	}
	e := newEnvWith(t, gateway.Options{}, servers...)
	var changed atomic.Int32
	cs := e.connect("/mcp", countListChanged(&changed))
	// One list, as a one-shot client makes it: no polling.
	names := listToolNames(t, context.Background(), cs)
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Fatalf("first tools/list = %v, want every server's tools (%v)", names, want)
		}
	}
	// The five startups, 100 ms apart, reach the client as one change
	// (none if every server was up before the client's session existed),
	// also when a loaded machine stalls the gateway in the middle of it
	// (listhold.go; TestAStalledGatewayStillSendsOneListChangedPerChange
	// makes the stall happen). A few hundred milliseconds give a stray
	// notification the time to arrive.
	time.Sleep(500 * time.Millisecond)
	if n := changed.Load(); n > 1 {
		t.Errorf("%d tools/list_changed for 5 servers starting, want one", n)
	}
}

func TestCallOfAToolNotListedYetWaitsForItsServer(t *testing.T) {
	e := newEnvWith(t, gateway.Options{}, stdio(t, "late", "-startup-delay", "500ms"))
	cs := e.connect("/mcp", nil)
	// No tools/list first: the client calls a tool it knows from before.
	if got := text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late__echo", Arguments: map[string]any{"text": "here"}})); got != "here" {
		t.Fatalf("late__echo = %q", got)
	}
}

func TestPerServerEndpointWaitsForAServerAddedAtRuntime(t *testing.T) {
	e := newEnvWith(t, gateway.Options{})
	if _, err := e.reg.Create(context.Background(), stdio(t, "fresh", "-startup-delay", "500ms")); err != nil {
		t.Fatal(err)
	}
	cs := e.connect("/mcp/fresh", nil)
	if names := listToolNames(t, context.Background(), cs); !slices.Contains(names, "echo") {
		t.Fatalf("first tools/list on /mcp/fresh = %v, want its tools", names)
	}
}

func TestFailedFirstAttemptDoesNotHoldTheList(t *testing.T) {
	e := newEnvWith(t, gateway.Options{ReadyTimeout: time.Minute},
		stdio(t, "broken", "-exit-at-startup", "1"),
		stdio(t, "fine", "-startup-delay", "200ms"))
	cs := e.connect("/mcp", nil)
	names := listToolNames(t, context.Background(), cs)
	if !slices.Contains(names, "fine__echo") {
		t.Fatalf("first tools/list = %v, want fine's tools", names)
	}
	// The answer came during broken's first backoff (2 s): its first
	// failure was enough, and its retries did not hold the list.
	v, err := e.reg.Get("broken")
	if err != nil {
		t.Fatal(err)
	}
	if rt := v.Runtime; rt.Attempt != 1 || rt.NextRetryAt == nil {
		t.Errorf("broken when the list was answered: attempt %d, next retry %v; want its first backoff", rt.Attempt, rt.NextRetryAt)
	}
}

func TestHungFirstAttemptHoldsTheListOnlyForTheReadyTimeout(t *testing.T) {
	e := newEnvWith(t, gateway.Options{ReadyTimeout: time.Second},
		stdio(t, "hung", "-hang-initialize"), // 120 s startup timeout
		stdio(t, "fine"))
	cs := e.connect("/mcp", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := listToolNames(t, ctx, cs)
	if !slices.Contains(names, "fine__echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "hung__") }) {
		t.Fatalf("tools/list = %v, want fine's tools only", names)
	}
	if v, _ := e.reg.Get("hung"); v.Runtime.Status != sb.StatusConnecting {
		t.Errorf("hung is %s, want still connecting", v.Runtime.Status)
	}
}

func TestReadyTimeoutOffAnswersAtOnce(t *testing.T) {
	e := newEnvWith(t, gateway.Options{ReadyTimeout: -1}, stdio(t, "slowstart", "-startup-delay", "3s"))
	cs := e.connect("/mcp", nil)
	if names := listToolNames(t, context.Background(), cs); len(names) != 0 {
		t.Fatalf("tools/list = %v, want none yet (no wait)", names)
	}
}

// The rest runs in testing/synctest bubbles, with in-process servers.

// fleet returns a config per script and the session options that run them
// in process, for testing/synctest bubbles (see testserver.Fleet).
func fleet(t *testing.T, scripts map[string]testserver.Script) (map[string]*sb.ServerConfig, upstream.Options) {
	t.Helper()
	cfgs, dial := testserver.Fleet(t, scripts)
	return cfgs, upstream.Options{Logger: slog.New(slog.DiscardHandler), Dial: dial}
}

// bubble is a registry of in-process servers and a gateway, with a client
// of the aggregate over in-memory transports, as switchboard stdio wires
// them; everything lives in the calling synctest bubble.
type bubble struct {
	reg *registry.Registry
	gw  *gateway.Gateway
	cs  *mcp.ClientSession
}

// newBubble stores cfgs (the others of a fleet can be created later),
// starts the registry and the gateway, and connects a client at once.
func newBubble(t *testing.T, opts gateway.Options, so upstream.Options, copts *mcp.ClientOptions, cfgs ...*sb.ServerConfig) *bubble {
	t.Helper()
	ctx := context.Background()
	reg := newRegistry(t, so, cfgs...)
	gw := newGateway(t, reg, reg, opts)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return &bubble{reg: reg, gw: gw, cs: connectServer(t, gw.Aggregate(), copts)}
}

// connectServer connects a 2025-11-25 client to srv (the aggregate, a
// toolset) over in-memory transports, as switchboard stdio wires them;
// closed when the test ends.
func connectServer(t *testing.T, srv *mcp.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ide"}, copts).Connect(context.Background(), clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// newRegistry stores cfgs and returns a registry over them, not loaded
// yet, shut down when the test ends.
func newRegistry(t *testing.T, so upstream.Options, cfgs ...*sb.ServerConfig) *registry.Registry {
	t.Helper()
	reg := registry.New(sqlitetest.Store(t, cfgs...), &registry.Options{Logger: slog.New(slog.DiscardHandler), Session: so})
	t.Cleanup(func() { reg.Shutdown(context.Background()) })
	return reg
}

// newGateway returns a gateway over src whose calls run on reg's
// sessions, closed when the test ends.
func newGateway(t *testing.T, src gateway.Source, reg *registry.Registry, opts gateway.Options) *gateway.Gateway {
	t.Helper()
	opts.Executor, opts.Logger = executor.New(executor.NewMCP(reg)), slog.New(slog.DiscardHandler)
	gw := gateway.New(src, opts)
	t.Cleanup(gw.Close)
	return gw
}

// values returns the configs of names, in that order.
func values(cfgs map[string]*sb.ServerConfig, names ...string) []*sb.ServerConfig {
	var out []*sb.ServerConfig
	for _, n := range names {
		out = append(out, cfgs[n])
	}
	return out
}

// echoes returns "<server>__echo" for each server.
func echoes(servers ...string) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s+"__echo")
	}
	return out
}

// hasAll reports whether names holds every one of want.
func hasAll(names []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(names, w) {
			return false
		}
	}
	return true
}

// stalling is a Source whose lookups of some servers take a while, as
// every step of the gateway may on a loaded machine (a scheduler that
// stalls a thread for longer than the go-sdk's 10 ms debounce).
type stalling struct {
	*registry.Registry
	servers []string
	stall   time.Duration
}

func (s stalling) Session(name string) (*upstream.Session, bool) {
	if slices.Contains(s.servers, name) {
		time.Sleep(s.stall)
	}
	return s.Registry.Session(name)
}

// delayListChanged makes srv's list_changed notifications take delay on
// their way from the go-sdk's debounce timer to the gateway's hold, as a
// loaded machine delays the timer's goroutine: the notification of a
// change made during a batch may then reach the hold after the batch.
func delayListChanged(srv *mcp.Server, delay time.Duration) {
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasSuffix(method, "/list_changed") {
				time.Sleep(delay)
			}
			return next(ctx, method, req)
		}
	})
}

// startingTogether is a registry of the servers named, each of which
// starts a second after it is spawned.
func startingTogether(t *testing.T, servers ...string) *registry.Registry {
	t.Helper()
	scripts := make(map[string]testserver.Script)
	for _, s := range servers {
		scripts[s] = testserver.Script{After: time.Second}
	}
	cfgs, so := fleet(t, scripts)
	return newRegistry(t, so, values(cfgs, servers...)...)
}

func TestAStalledGatewayStillSendsOneListChangedPerChange(t *testing.T) {
	servers := []string{"s1", "s2", "s3", "s4", "s5"}
	for _, tc := range []struct {
		name string
		list bool // the client lists at once (the list's wait syncs the mirror too)
	}{{"listing", true}, {"not listing", false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				reg := startingTogether(t, servers...)
				// 50 ms at s3: the mirror's changes for s1 and s2 are
				// 10 ms old by then, and the go-sdk's debounce has run out.
				gw := newGateway(t, stalling{reg, []string{"s3"}, 50 * time.Millisecond}, reg, gateway.Options{})
				var changed atomic.Int32
				cs := connectServer(t, gw.Aggregate(), countListChanged(&changed))
				if err := reg.Load(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.list {
					if names := listToolNames(t, ctx, cs); !hasAll(names, echoes(servers...)...) {
						t.Errorf("first tools/list = %v, want every server's", names)
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := changed.Load(); n != 1 {
					t.Errorf("%d tools/list_changed for 5 servers that started together, want 1", n)
				}
				// Nothing is lost: a change after that is one more.
				if err := reg.Restart("s1"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := changed.Load(); n < 2 {
					t.Errorf("%d tools/list_changed after s1 restarted, want more than 1", n)
				}
				if names := listToolNames(t, ctx, cs); !hasAll(names, echoes(servers...)...) {
					t.Errorf("tools/list in the end = %v", names)
				}
			})
		})
	}
}

func TestALateNotificationOfAChangeStillMakesOneListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		servers := []string{"s1", "s2", "s3"}
		ctx := context.Background()
		reg := startingTogether(t, servers...)
		// The flush adds s1's tools at 0, s2's at 50 ms and s3's at 100 ms,
		// when it ends. The go-sdk's notification of s1's (at 10 ms)
		// reaches the hold at 60 ms and is held; that of s2's (at 60 ms)
		// reaches it at 110 ms, after the flush, and the one the hold
		// owes the clients follows it.
		gw := newGateway(t, stalling{reg, []string{"s2", "s3"}, 50 * time.Millisecond}, reg, gateway.Options{})
		delayListChanged(gw.Aggregate(), 50*time.Millisecond)
		// Two clients: each is told once.
		var changed [2]atomic.Int32
		var cs [2]*mcp.ClientSession
		for i := range cs {
			cs[i] = connectServer(t, gw.Aggregate(), countListChanged(&changed[i]))
		}
		if err := reg.Load(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for i := range changed {
			if n := changed[i].Load(); n != 1 {
				t.Errorf("client %d: %d tools/list_changed for 3 servers that started together, want 1", i, n)
			}
		}
		// Nothing is lost: each change after that is one more.
		if err := reg.Restart("s1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for i := range changed {
			if n := changed[i].Load(); n != 3 {
				t.Errorf("client %d: %d tools/list_changed in all after s1 restarted, want 3 (one more for its drop, one for its return a second later)", i, n)
			}
		}
		if names := listToolNames(t, ctx, cs[0]); !hasAll(names, echoes(servers...)...) {
			t.Errorf("tools/list in the end = %v", names)
		}
	})
}

func TestAStalledChangeThatEmptiesTheListIsStillAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"s1": {}, "s2": {}})
		ctx := context.Background()
		reg := newRegistry(t, so, values(cfgs, "s1", "s2")...)
		gw := newGateway(t, stalling{reg, []string{"s2"}, 50 * time.Millisecond}, reg, gateway.Options{})
		var changed atomic.Int32
		cs := connectServer(t, gw.Aggregate(), countListChanged(&changed))
		if err := reg.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if names := listToolNames(t, ctx, cs); !hasAll(names, echoes("s1", "s2")...) {
			t.Fatalf("first tools/list = %v", names)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		before := changed.Load()
		// Both go in one change window; the stall at s2 lets the go-sdk
		// announce s1's part first, and then nothing is left to touch
		// (renotify's other way): the held notification is sent, and the
		// go-sdk's of s2's part, which follows it, is not.
		for _, name := range []string{"s1", "s2"} {
			if _, err := reg.SetEnabled(ctx, name, false); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := changed.Load() - before; n != 1 {
			t.Errorf("%d tools/list_changed for two servers disabled together, want 1", n)
		}
		if names := listToolNames(t, ctx, cs); len(names) != 0 {
			t.Errorf("tools/list in the end = %v, want none", names)
		}
	})
}

func TestFirstListWaitsForEveryFirstAttemptAndCostsOneListChanged(t *testing.T) {
	servers := []string{"s1", "s2", "s3", "s4", "s5"}
	scripts := make(map[string]testserver.Script)
	for i, s := range servers {
		scripts[s] = testserver.Script{After: time.Duration(i+1) * time.Second}
	}
	for _, tc := range []struct {
		name        string
		ready       time.Duration
		list        bool // the client lists at once
		wantAt      time.Duration
		wantTools   []string
		wantChanged int32
	}{
		{"waits", 0, true, 5 * time.Second, echoes(servers...), 1},
		{"holds list_changed without a request", 0, false, 0, nil, 1},
		// The old behaviour: an answer at once, then one list_changed per
		// server (they start a second apart, beyond the change window).
		{"off", -1, true, 0, nil, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfgs, so := fleet(t, scripts)
				var changed atomic.Int32
				b := newBubble(t, gateway.Options{ReadyTimeout: tc.ready}, so, countListChanged(&changed), values(cfgs, servers...)...)
				if tc.list {
					start := time.Now()
					names := listToolNames(t, context.Background(), b.cs)
					if d := time.Since(start); d != tc.wantAt {
						t.Errorf("first tools/list answered after %v, want %v", d, tc.wantAt)
					}
					if !hasAll(names, tc.wantTools...) || (tc.wantTools == nil && len(names) != 0) {
						t.Errorf("first tools/list = %v, want %v", names, tc.wantTools)
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := changed.Load(); n != tc.wantChanged {
					t.Errorf("%d tools/list_changed while 5 servers started, want %d", n, tc.wantChanged)
				}
				if names := listToolNames(t, context.Background(), b.cs); !hasAll(names, echoes(servers...)...) {
					t.Errorf("tools/list in the end = %v", names)
				}
			})
		})
	}
}

func TestFailedFirstAttemptEndsTheWaitForItsServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{
			"ok":  {After: time.Second},
			"bad": {After: 2 * time.Second, FailFirst: true}, // retried 2 s (±20 %) later
		})
		b := newBubble(t, gateway.Options{ReadyTimeout: time.Minute}, so, nil, values(cfgs, "ok", "bad")...)
		start := time.Now()
		names := listToolNames(t, context.Background(), b.cs)
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("answered after %v, want 2s: the failure of bad's first attempt", d)
		}
		if !hasAll(names, "ok__echo") || hasAll(names, "bad__echo") {
			t.Errorf("tools/list = %v, want ok's tools only", names)
		}
	})
}

func TestReadyTimeoutBoundsTheWaitFromTheServersStart(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ready        time.Duration
		listAt       time.Duration // when the client lists, after the start
		wantAnswerAt time.Duration
	}{
		{"default", 0, 0, gateway.DefaultReadyTimeout},
		{"configured", 3 * time.Second, 0, 3 * time.Second},
		{"counted from the start", 3 * time.Second, 2 * time.Second, 3 * time.Second},
		{"past", 3 * time.Second, 5 * time.Second, 5 * time.Second},
		{"off", -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfgs, so := fleet(t, map[string]testserver.Script{"hung": {Hang: true}, "ok": {After: time.Second}})
				start := time.Now()
				b := newBubble(t, gateway.Options{ReadyTimeout: tc.ready}, so, nil, values(cfgs, "hung", "ok")...)
				time.Sleep(tc.listAt)
				names := listToolNames(t, context.Background(), b.cs)
				if d := time.Since(start); d != tc.wantAnswerAt {
					t.Errorf("answered %v after the start, want %v", d, tc.wantAnswerAt)
				}
				if tc.ready >= 0 && !hasAll(names, "ok__echo") {
					t.Errorf("tools/list = %v, want ok's tools", names)
				}
				// Once answered, the hung server holds nothing any more.
				again := time.Now()
				listToolNames(t, context.Background(), b.cs)
				if d := time.Since(again); d != 0 {
					t.Errorf("the next tools/list waited %v", d)
				}
			})
		})
	}
}

func TestCallOfAToolNotListedYetWaitsInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"late": {After: 2 * time.Second}})
		b := newBubble(t, gateway.Options{}, so, nil, cfgs["late"])
		start := time.Now()
		res, err := b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late__echo", Arguments: map[string]any{"text": "x"}})
		if err != nil || res.IsError {
			t.Fatalf("late__echo: %v %+v", err, res)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("answered after %v, want 2s (when late connected)", d)
		}
		// A tool that no server has is still unknown, at once now.
		again := time.Now()
		if _, err := b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nobody__echo"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("nobody__echo: %v, want unknown tool", err)
		}
		if d := time.Since(again); d != 0 {
			t.Errorf("the unknown tool waited %v", d)
		}
	})
}

func TestServersAddedTogetherCostOneListChanged(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ready       time.Duration
		spread      time.Duration // between one server's connection and the next's
		wantChanged int32
	}{
		{"held for the first attempts", 0, 300 * time.Millisecond, 1},
		{"within the change window", -1, 50 * time.Millisecond, 1},
		{"beyond the change window", -1, 300 * time.Millisecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfgs, so := fleet(t, map[string]testserver.Script{
					"base": {}, "a": {}, "b": {After: tc.spread}, "c": {After: 2 * tc.spread},
				})
				var changed atomic.Int32
				b := newBubble(t, gateway.Options{ReadyTimeout: tc.ready}, so, countListChanged(&changed), cfgs["base"])
				time.Sleep(time.Minute)
				synctest.Wait()
				changed.Store(0)
				for _, name := range []string{"a", "b", "c"} {
					if _, err := b.reg.Create(context.Background(), cfgs[name]); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := changed.Load(); n != tc.wantChanged {
					t.Errorf("%d tools/list_changed for 3 servers added together, want %d", n, tc.wantChanged)
				}
				if names := listToolNames(t, context.Background(), b.cs); !hasAll(names, echoes("base", "a", "b", "c")...) {
					t.Errorf("tools/list = %v", names)
				}
			})
		})
	}
}

func TestServersRestartedTogetherCostOneListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		servers := []string{"a", "b", "c"}
		cfgs, so := fleet(t, map[string]testserver.Script{"a": {After: 100 * time.Millisecond}, "b": {After: 100 * time.Millisecond}, "c": {After: 100 * time.Millisecond}})
		var changed atomic.Int32
		b := newBubble(t, gateway.Options{}, so, countListChanged(&changed), values(cfgs, servers...)...)
		time.Sleep(time.Minute)
		synctest.Wait()
		changed.Store(0)
		// As in an upstream outage: every server drops at once and is back
		// 100 ms later.
		for _, name := range servers {
			if err := b.reg.Restart(name); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := changed.Load(); n != 1 {
			t.Errorf("%d tools/list_changed for 3 servers dropping and returning together, want 1", n)
		}
		if names := listToolNames(t, context.Background(), b.cs); !hasAll(names, echoes(servers...)...) {
			t.Errorf("tools/list = %v", names)
		}
	})
}

func TestWaitInStepReturnsOnceTheMirrorsShowEveryFirstAttempt(t *testing.T) {
	servers := []string{"s1", "s2", "s3"}
	scripts := make(map[string]testserver.Script)
	for i, s := range servers {
		scripts[s] = testserver.Script{After: time.Duration(i+1) * time.Second}
	}
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, scripts)
		var changed atomic.Int32
		// As serve does: the gateway first, then the servers.
		b := newBubble(t, gateway.Options{}, so, countListChanged(&changed), values(cfgs, servers...)...)
		gw, ctx := b.gw, context.Background()

		start := time.Now()
		if err := gw.WaitInStep(ctx); err != nil {
			t.Fatal(err)
		}
		// The last first attempt ends at 3 s; its event opens the change
		// window (200 ms), which the flush waits for.
		if d := time.Since(start); d < 3*time.Second || d > 3200*time.Millisecond {
			t.Errorf("WaitInStep returned after %v, want 3–3.2 s (the last first attempt, then the change window)", d)
		}
		// The mirror changed before the wait ended: the go-sdk's
		// list_changed (debounced 10 ms) follows without another sync.
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if n := changed.Load(); n != 1 {
			t.Errorf("%d tools/list_changed by the end of WaitInStep, want 1", n)
		}
		start = time.Now()
		if err := gw.WaitInStep(ctx); err != nil || time.Since(start) != 0 {
			t.Errorf("WaitInStep in step = %v after %v, want nil at once", err, time.Since(start))
		}

		gw.Close()
		if err := gw.WaitInStep(ctx); err == nil {
			t.Error("WaitInStep on a closed gateway = nil, want an error")
		}
	})
}

// withoutStarts is a registry whose events reach the gateway without the
// servers' starting events: as when the gateway is asked whether it is in
// step before the sessions that Load started have sent them, or while they
// are still queued behind the question.
type withoutStarts struct{ *registry.Registry }

func (w withoutStarts) Subscribe() (<-chan sb.Event, func()) {
	in, stop := w.Registry.Subscribe()
	out, done := make(chan sb.Event), make(chan struct{})
	go func() {
		for ev := range in { // until stop closes it
			if ev.Reason == sb.ReasonStarting {
				continue
			}
			select {
			case out <- ev:
			case <-done:
			}
		}
	}()
	return out, func() { close(done); stop() }
}

func TestWaitInStepWaitsForFirstAttemptsWhoseStartingEventsHaveNotComeIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"s1": {After: time.Second}, "s2": {After: 2 * time.Second}})
		reg := newRegistry(t, so, values(cfgs, "s1", "s2")...)
		gw := newGateway(t, withoutStarts{reg}, reg, gateway.Options{})
		// The gateway's first hold is over: there was no server to wait for.
		synctest.Wait()
		ctx := context.Background()
		if err := reg.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if err := gw.WaitInStep(ctx); err != nil {
			t.Fatal(err)
		}
		if got := gateway.AggregateTools(gw); !hasAll(got, echoes("s1", "s2")...) {
			t.Errorf("the aggregate shows %v once WaitInStep returned, want every server's tools", got)
		}
	})
}

func TestWaitInStepDoesNotWaitForTheChangeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"a": {}})
		b := newBubble(t, gateway.Options{}, so, nil, cfgs["a"])
		time.Sleep(time.Minute)
		synctest.Wait()
		// The drop and the reconnect open a change window; no first
		// attempt is pending.
		if err := b.reg.Restart("a"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		if err := b.gw.WaitInStep(context.Background()); err != nil || time.Since(start) != 0 {
			t.Errorf("WaitInStep with a change window open = %v after %v, want nil at once", err, time.Since(start))
		}
		if names := gateway.AggregateTools(b.gw); !hasAll(names, "a__echo") {
			t.Errorf("the aggregate shows %v once WaitInStep returned, want a's tools", names)
		}
	})
}

// A toolset's first list waits only for the servers the toolset selects:
// a server of the aggregate that hangs in its first attempt holds /mcp for
// the ready timeout, and on the old code held every toolset as long.
func TestToolsetFirstListWaitsOnlyForItsOwnServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"fast": {After: time.Second}, "hung": {Hang: true}})
		ctx := context.Background()
		st := sqlitetest.Store(t, values(cfgs, "fast", "hung")...)
		toolsets, err := registry.NewToolsets(st, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := toolsets.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := toolsets.Create(ctx, &sb.Toolset{Name: "quick", Tools: []sb.Selector{{Server: "fast", Tool: "*"}}}); err != nil {
			t.Fatal(err)
		}
		reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler), Session: so,
			Followers: []registry.Follower{toolsets}})
		t.Cleanup(func() { reg.Shutdown(context.Background()) })
		gw := newGateway(t, reg, reg, gateway.Options{ReadyTimeout: time.Minute, Toolsets: toolsets})
		if err := reg.Load(ctx); err != nil {
			t.Fatal(err)
		}
		srv, ok := gw.ServeToolset("quick")
		if !ok {
			t.Fatal("no toolset quick")
		}
		cs := connectServer(t, srv, nil)

		start := time.Now()
		names := listToolNames(t, ctx, cs)
		if d := time.Since(start); d != time.Second {
			t.Errorf("the toolset's first tools/list answered after %v, want 1s (fast's start; not the minute hung may take)", d)
		}
		if !slices.Contains(names, "fast__echo") {
			t.Errorf("the toolset's first tools/list = %v, want fast's tools", names)
		}
	})
}
