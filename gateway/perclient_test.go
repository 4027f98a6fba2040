package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/proc"
)

// perClient sets cfg's session_scope to "per-client".
func perClient(cfg *sb.ServerConfig) *sb.ServerConfig {
	cfg.SessionScope = sb.SessionPerClient
	return cfg
}

// pidOf calls the test server's pid tool through cs.
func pidOf(t *testing.T, cs *mcp.ClientSession, tool string) int {
	t.Helper()
	pid, err := strconv.Atoi(text(t)(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// sharedPID is the process of a server's shared session.
func (e *env) sharedPID(name string) int {
	e.t.Helper()
	v, err := e.reg.Get(name)
	if err != nil || v.Runtime.PID == 0 {
		e.t.Fatalf("%s: no shared process: %v %+v", name, err, v.Runtime)
	}
	return v.Runtime.PID
}

// answering returns client options whose elicitation handler records the
// question, tells asked, waits for release, and accepts with answer.
func answering(answer string, asked chan<- string, release <-chan struct{}) *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- r.Params.Message
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
	}}
}

// answeringClients connects one client to path for each name in who, each
// answering elicitations as answering does with its name, on its own
// channel of asked and on the one release.
func answeringClients(e *env, path string, who []string) ([]*mcp.ClientSession, []chan string, chan struct{}) {
	e.t.Helper()
	asked := make([]chan string, len(who))
	release := make(chan struct{})
	sessions := make([]*mcp.ClientSession, len(who))
	for i, name := range who {
		asked[i] = make(chan string, 1)
		sessions[i] = e.connect(path, answering(name, asked[i], release))
	}
	return sessions, asked, release
}

// Two clients of a stdio server with session_scope "per-client" call a
// tool that elicits at the same time: both questions are open at once,
// each is asked of the client whose call caused it, and each answer
// reaches its own call. Each client has a process of its own, apart from
// the shared one, and keeps it from call to call.
func TestPerClientSessionsAnswerOverlappingElicitationsOnTheirOwnCalls(t *testing.T) {
	e := newEnv(t, "", perClient(stdio(t, "pc")))
	who := []string{"alice", "bob"}
	sessions, asked, release := answeringClients(e, "/mcp/pc", who)
	waitTools(t, sessions[0], "elicit", "pid")

	pids := make([]int, len(who))
	for i, cs := range sessions {
		pids[i] = pidOf(t, cs, "pid")
	}
	shared := e.sharedPID("pc")
	if pids[0] == pids[1] || pids[0] == shared || pids[1] == shared {
		t.Fatalf("pids: alice %d, bob %d, shared %d; want three processes", pids[0], pids[1], shared)
	}

	results := make([]string, len(who))
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "elicit",
				Arguments: map[string]any{"message": "question for " + who[i]}})
			if err != nil {
				results[i] = err.Error()
				return
			}
			results[i] = res.Content[0].(*mcp.TextContent).Text
		})
	}
	// Both questions are open before either is answered.
	for i, name := range who {
		select {
		case q := <-asked[i]:
			if q != "question for "+name {
				t.Errorf("%s was asked %q", name, q)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was never asked (results so far %q)", name, results)
		}
	}
	close(release)
	wg.Wait()
	for i, name := range who {
		if results[i] != "answer: "+name {
			t.Errorf("%s's call returned %q, want %q", name, results[i], "answer: "+name)
		}
	}

	if again := pidOf(t, sessions[0], "pid"); again != pids[0] {
		t.Errorf("alice's second call ran in process %d, her first in %d", again, pids[0])
	}
}

// With the default scope the two clients share one stdio process, which
// cannot say which call its elicitation belongs to: while one client's
// question is open, the other client's is refused (and that client is
// never asked), which is what session_scope "per-client" is for.
func TestSharedSessionRefusesAnElicitationWhileAnotherIsOpen(t *testing.T) {
	e := newEnv(t, "", stdio(t, "sh"))
	aliceAsked, bobAsked := make(chan string, 1), make(chan string, 1)
	release := make(chan struct{})
	alice := e.connect("/mcp/sh", answering("alice", aliceAsked, release))
	bob := e.connect("/mcp/sh", answering("bob", bobAsked, release))
	waitTools(t, alice, "elicit")

	if a, b := pidOf(t, alice, "pid"), pidOf(t, bob, "pid"); a != b {
		t.Fatalf("shared scope: alice's call ran in process %d, bob's in %d", a, b)
	}
	aliceResult := make(chan string, 1)
	go func() {
		aliceResult <- text(t)(alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "elicit",
			Arguments: map[string]any{"message": "question for alice"}}))
	}()
	select {
	case <-aliceAsked:
	case <-time.After(20 * time.Second):
		t.Fatal("alice was never asked")
	}
	res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "elicit",
		Arguments: map[string]any{"message": "question for bob"}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(got, "2 calls to sh accept elicitation at once; cannot tell which one this request belongs to") {
		t.Errorf("bob's overlapping call returned %q (isError %v); want the ambiguity refusal", got, res.IsError)
	}
	select {
	case q := <-bobAsked:
		t.Errorf("bob was asked %q", q)
	default:
	}
	close(release)
	if got := <-aliceResult; got != "answer: alice" {
		t.Errorf("alice's call returned %q", got)
	}
}

// waitDead waits until pid is no longer a live process.
func waitDead(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for proc.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs %v later", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that disconnects has its upstream process stopped; the shared
// process and the other clients' stay.
func TestDisconnectedClientsUpstreamProcessIsStopped(t *testing.T) {
	e := newEnv(t, "", perClient(stdio(t, "dc")))
	leaving := e.connect("/mcp/dc", nil)
	staying := e.connect("/mcp", nil)
	waitTools(t, leaving, "pid")
	waitTools(t, staying, "dc__pid")
	gone, kept := pidOf(t, leaving, "pid"), pidOf(t, staying, "dc__pid")
	if gone == kept || !proc.Alive(gone) {
		t.Fatalf("pids %d and %d (alive %v)", gone, kept, proc.Alive(gone))
	}
	if err := leaving.Close(); err != nil {
		t.Fatal(err)
	}
	// The client's DELETE ends its session, which releases it at once.
	waitDead(t, gone, 3*time.Second)
	if !proc.Alive(kept) || !proc.Alive(e.sharedPID("dc")) {
		t.Fatalf("another client's process (%v) or the shared one (%v) stopped too", proc.Alive(kept), proc.Alive(e.sharedPID("dc")))
	}
	if again := pidOf(t, staying, "dc__pid"); again != kept {
		t.Errorf("the staying client's process changed from %d to %d", kept, again)
	}
}

// Deleting a per-client server, and closing the gateway, stop the
// processes the clients had.
func TestClientProcessesEndWithTheServerAndTheGateway(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(e *env) error
	}{
		{"server deleted", func(e *env) error { return e.reg.Delete(context.Background(), "gw", 0) }},
		{"server disabled", func(e *env) error {
			_, err := e.reg.SetEnabled(context.Background(), "gw", false)
			return err
		}},
		{"gateway closed", func(e *env) error { e.gw.Close(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "", perClient(stdio(t, "gw")))
			cs := e.connect("/mcp", nil)
			waitTools(t, cs, "gw__pid")
			pid := pidOf(t, cs, "gw__pid")
			if err := tc.end(e); err != nil {
				t.Fatal(err)
			}
			waitDead(t, pid, 10*time.Second)
		})
	}
}

// A client whose downstream session is closed for it (the Streamable HTTP
// session timeout) loses its process too, without a DELETE.
func TestTimedOutClientsUpstreamProcessIsStopped(t *testing.T) {
	e := newEnvWith(t, gateway.Options{SessionTimeout: 500 * time.Millisecond}, perClient(stdio(t, "to")))
	cs := e.connect("/mcp/to", nil)
	waitTools(t, cs, "pid")
	pid := pidOf(t, cs, "pid")
	// The client stays silent; the session times out, and its end is
	// known then.
	waitDead(t, pid, 15*time.Second)
}

// A downstream session without a session id, as `switchboard stdio`
// serves the aggregate over its stdin and stdout, is a client too: its
// calls get a process of their own, stopped when the session ends.
func TestStdioClientGetsAProcessOfItsOwn(t *testing.T) {
	e := newEnv(t, "", perClient(stdio(t, "io")))
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.gw.Aggregate().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ide"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "io__pid")
	pid := pidOf(t, cs, "io__pid")
	if shared := e.sharedPID("io"); pid == shared {
		t.Fatalf("the stdio client's call ran in the shared process %d", shared)
	}
	if again := pidOf(t, cs, "io__pid"); again != pid {
		t.Fatalf("its second call ran in process %d, the first in %d", again, pid)
	}
	cs.Close()
	waitDead(t, pid, 10*time.Second)
}

// Calls that have no downstream session run on the shared session of a
// per-client server: a stateless (2026-07-28) request, and the HTTP API.
func TestCallsWithoutADownstreamSessionUseTheSharedSession(t *testing.T) {
	e := newEnv(t, "", perClient(stdio(t, "st")))

	c := mcp.NewClient(&mcp.Implementation{Name: "modern"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp/st"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want the stateless 2026-07-28", v)
	}
	waitTools(t, cs, "pid")
	shared := e.sharedPID("st")
	if got := pidOf(t, cs, "pid"); got != shared {
		t.Errorf("a stateless call ran in process %d, the shared one is %d", got, shared)
	}

	body, _ := json.Marshal(map[string]any{"tool": "st/pid"})
	resp, err := http.Post(e.url+"/api/v1/call", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Result.Content) == 0 {
		t.Fatalf("API call: status %d, %v %+v", resp.StatusCode, err, out)
	}
	if got := out.Result.Content[0].(*mcp.TextContent).Text; got != fmt.Sprint(shared) {
		t.Errorf("an API call ran in process %s, the shared one is %d", got, shared)
	}
}
