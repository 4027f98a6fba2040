package testserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

func TestMain(m *testing.M) {
	// goleak.Cleanup replaces goleak's final os.Exit, so it must exit itself
	// to keep a leak (or a failed test) a failure.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testserver.RemoveBinary()
		os.Exit(code)
	}))
}

// pinned is the protocol version every test uses unless it tests discovery.
var pinned = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// opTimeout bounds every single client operation in these tests.
const opTimeout = 10 * time.Second

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// stdioServer is a testserver connected over stdio through the SDK's
// CommandTransport, which reaps the process when the session closes.
type stdioServer struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *testserver.Buffer
}

func connectStdio(t *testing.T, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, args ...string) *stdioServer {
	t.Helper()
	srv, err := tryConnectStdio(t, opts, sessOpts, opTimeout, args...)
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, srv.stderr)
	}
	return srv
}

func tryConnectStdio(t *testing.T, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, timeout time.Duration, args ...string) (*stdioServer, error) {
	t.Helper()
	srv := &stdioServer{cmd: testserver.Command(t, args...), stderr: &testserver.Buffer{}}
	srv.cmd.Stderr = srv.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "testserver-test", Version: "1"}, opts)
	cs, err := client.Connect(ctxTimeout(t, timeout), &mcp.CommandTransport{Command: srv.cmd}, sessOpts)
	if err != nil {
		return srv, err
	}
	srv.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return srv, nil
}

func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// mustText calls a tool and returns the text of its single text content.
func mustText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := callTool(ctxTimeout(t, opTimeout), cs, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, resultText(res))
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return fmt.Sprintf("<%d contents>", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return fmt.Sprintf("<%T>", res.Content[0])
	}
	return tc.Text
}

// eventually polls cond until it holds, failing the test after opTimeout.
// Output reaches the test's buffers asynchronously (exec copies the pipes in
// goroutines), so assertions on a running process's stderr need it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(opTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isEvent(kind string) func(testserver.Event) bool {
	return func(e testserver.Event) bool { return e.Event == kind }
}

func isToolEvent(kind, tool string) func(testserver.Event) bool {
	return func(e testserver.Event) bool { return e.Event == kind && e.Tool == tool }
}

func TestStdioTools(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	srv := connectStdio(t, nil, pinned, "-events", events)
	cs := srv.cs
	ctx := ctxTimeout(t, opTimeout)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "echo" {
			schema, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(schema), `"required":["text"]`) || !strings.Contains(string(schema), `"text":{`) {
				t.Errorf("echo input schema = %s, want property text, required", schema)
			}
		}
	}
	for _, want := range []string{"echo", "add", "slow", "sleep", "elicit", "add_tool", "crash", "big", "fail", "pid"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %q (got %v)", want, names)
		}
	}

	res, err := callTool(ctx, cs, "echo", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); got != "hello" {
		t.Errorf("echo text = %q", got)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"text":"hello"}` {
		t.Errorf("echo structuredContent = %s", sc)
	}
	if got := mustText(t, cs, "add", map[string]any{"a": 2, "b": 3.5}); got != "5.5" {
		t.Errorf("add = %q", got)
	}
	if got := mustText(t, cs, "big", map[string]any{"bytes": 100000}); got != strings.Repeat("x", 100000) {
		t.Errorf("big returned %d bytes", len(got))
	}
	if got := mustText(t, cs, "pid", nil); got != strconv.Itoa(srv.cmd.Process.Pid) {
		t.Errorf("pid = %q, process is %d", got, srv.cmd.Process.Pid)
	}
	res, err = callTool(ctx, cs, "fail", map[string]any{"message": "boom"})
	if err != nil || !res.IsError || resultText(res) != "boom" {
		t.Errorf("fail = %+v, %v; want isError with text boom", res, err)
	}
	// Schema validation is the SDK's, but a missing required argument must
	// be rejected, or the schemas above are decoration.
	if res, err := callTool(ctx, cs, "echo", map[string]any{}); err == nil && !res.IsError {
		t.Errorf("echo without text succeeded")
	}

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
		t.Errorf("read test://hello = %+v, %v", rr, err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://items/{id}" {
		t.Errorf("resource templates = %+v, %v", templates, err)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/42"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "item 42" {
		t.Errorf("read test://items/42 = %+v, %v", rr, err)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ann"}})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ann!" {
		t.Errorf("greet = %+v, %v", pr, err)
	}

	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after stdin closed, want 0", code)
	}
	stderr := srv.stderr.String()
	for _, want := range []string{
		fmt.Sprintf("testserver: started pid=%d transport=stdio\n", srv.cmd.Process.Pid),
		"testserver: call echo\n",
		"testserver: call add\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	evs := testserver.ReadEvents(t, events)
	find := func(pred func(testserver.Event) bool) *testserver.Event {
		for i := range evs {
			if pred(evs[i]) {
				return &evs[i]
			}
		}
		t.Errorf("no matching event in %+v", evs)
		return &testserver.Event{}
	}
	if e := find(isEvent("start")); e.Transport != "stdio" || e.PID != srv.cmd.Process.Pid {
		t.Errorf("start event = %+v", e)
	}
	if e := find(isEvent("initialize")); e.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize event = %+v", e)
	}
	if e := find(isToolEvent("request", "echo")); e.Method != "tools/call" || e.RequestID == "" {
		t.Errorf("request event = %+v", e)
	}
	find(isToolEvent("call", "echo"))
	if e := find(isEvent("exit")); e.Code != 0 || e.Reason != "stdin closed" {
		t.Errorf("exit event = %+v", e)
	}
}

// TestStdioDiscover leaves the protocol version unpinned: the SDK client
// then probes server/discover (2026-07-28), which this SDK server answers.
func TestStdioDiscover(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	srv := connectStdio(t, nil, nil, "-events", events)
	if got := mustText(t, srv.cs, "echo", map[string]any{"text": "new"}); got != "new" {
		t.Errorf("echo = %q", got)
	}
	testserver.WaitEvent(t, events, func(e testserver.Event) bool {
		return e.Event == "request" && e.Method == "server/discover"
	}, opTimeout)
}

// TestStdioProtocolVersions narrows the server to 2025-11-25: an unpinned
// client's server/discover is refused and it falls back to initialize.
func TestStdioProtocolVersions(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	srv := connectStdio(t, nil, nil, "-protocol-versions", "2025-11-25", "-events", events)
	if got := srv.cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", got)
	}
	testserver.WaitEvent(t, events, func(e testserver.Event) bool {
		return e.Event == "request" && e.Method == "server/discover"
	}, opTimeout)
	testserver.WaitEvent(t, events, isEvent("initialize"), opTimeout)
}

func TestStdioSIGTERM(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	cmd := testserver.Command(t, "-events", events)
	stdin, err := cmd.StdinPipe() // kept open: only the signal may end it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The start event is written after the signal handler is installed.
	testserver.WaitEvent(t, events, isEvent("start"), opTimeout)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if e := testserver.WaitEvent(t, events, isEvent("exit"), opTimeout); e.Code != 0 || e.Reason != "signal" {
		t.Errorf("exit event = %+v", e)
	}
}

func TestStdioCrashAfter(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	srv := connectStdio(t, nil, pinned, "-crash-after", "2", "-events", events)
	for i := range 2 {
		if got := mustText(t, srv.cs, "echo", map[string]any{"text": strconv.Itoa(i)}); got != strconv.Itoa(i) {
			t.Fatalf("call %d = %q", i, got)
		}
	}
	if res, err := callTool(ctxTimeout(t, opTimeout), srv.cs, "echo", map[string]any{"text": "3"}); err == nil {
		t.Fatalf("third call succeeded: %+v", res)
	}
	_ = srv.cs.Close() // reaps the process
	if code := srv.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit status = %d, want 3", code)
	}
	e := testserver.WaitEvent(t, events, isEvent("exit"), opTimeout)
	if e.Code != 3 || e.Reason != "crash-after" {
		t.Errorf("exit event = %+v", e)
	}
}

func TestStdioCrashTool(t *testing.T) {
	t.Parallel()
	srv := connectStdio(t, nil, pinned)
	if res, err := callTool(ctxTimeout(t, opTimeout), srv.cs, "crash", nil); err == nil {
		t.Fatalf("crash answered: %+v", res)
	}
	_ = srv.cs.Close()
	if code := srv.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit status = %d, want 3", code)
	}
}

func TestStdioExitAtStartup(t *testing.T) {
	t.Parallel()
	cmd := testserver.Command(t, "-exit-at-startup", "7", "-stderr-lines", "3")
	var stderr testserver.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 {
		t.Fatalf("run = %v, want exit status 7", err)
	}
	for _, want := range []string{"testserver: stderr line 3\n", "testserver: exiting at startup\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestStdioExitAtStartupUnless(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "repaired")
	err := testserver.Command(t, "-exit-at-startup-unless", marker).Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("without %s: run = %v, want exit status 1", marker, err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := connectStdio(t, nil, pinned, "-exit-at-startup-unless", marker)
	if err := srv.cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("with %s: ping = %v", marker, err)
	}
}

func TestStdioStderrLinesAndStartupDelay(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	start := time.Now()
	srv := connectStdio(t, nil, pinned, "-stderr-lines", "50", "-startup-delay", delay.String())
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("connected after %v, before the %v startup delay", elapsed, delay)
	}
	_ = srv.cs.Close()
	var got []string
	for line := range strings.Lines(srv.stderr.String()) {
		if rest, ok := strings.CutPrefix(line, "testserver: stderr line "); ok {
			got = append(got, strings.TrimSpace(rest))
		}
	}
	if len(got) != 50 || got[0] != "1" || got[49] != "50" {
		t.Errorf("numbered stderr lines = %v", got)
	}
}

func TestStdioHangInitialize(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	_, err := tryConnectStdio(t, nil, pinned, 500*time.Millisecond, "-hang-initialize", "-events", events)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connect = %v, want deadline exceeded", err)
	}
	e := testserver.WaitEvent(t, events, isEvent("dropped"), opTimeout)
	if e.Method != "initialize" || e.Reason != "hang-initialize" {
		t.Errorf("dropped event = %+v", e)
	}
}

func TestStdioMalformed(t *testing.T) {
	t.Parallel()
	// The bad line follows the initialize response at once, so the client
	// may already fail in Connect (sending notifications/initialized on a
	// connection it has just torn down); if not, the next request fails.
	srv, err := tryConnectStdio(t, nil, pinned, opTimeout, "-malformed")
	if err == nil {
		_, err = srv.cs.ListTools(ctxTimeout(t, opTimeout), nil)
	}
	if err == nil {
		t.Fatal("session survived a malformed line")
	}
	eventually(t, "stderr mentions the malformed line", func() bool {
		return strings.Contains(srv.stderr.String(), "malformed line")
	})
}

// rawStdio drives the server with hand-written JSON-RPC lines, for faults
// whose point is what the server does NOT send.
type rawStdio struct {
	stdin io.WriteCloser
	lines chan string
}

func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	cmd := testserver.Command(t, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{stdin: stdin, lines: make(chan string, 100)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		// Closing stdin ends the session; the server then exits by itself.
		_ = stdin.Close()
		select {
		case <-readDone:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-readDone
		}
		_ = cmd.Wait()
	})
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *rawStdio) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-r.lines:
		return line
	case <-time.After(opTimeout):
		t.Fatal("no output line")
		return ""
	}
}

// TestStdioIgnoreUnknown sends server/discover followed by ping: the first
// line out must answer the ping, proving discover was swallowed, not queued.
func TestStdioIgnoreUnknown(t *testing.T) {
	t.Parallel()
	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`

	t.Run("default answers", func(t *testing.T) {
		t.Parallel()
		r := startRawStdio(t)
		r.send(t, discover)
		if line := r.next(t); !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"error"`) {
			t.Errorf("first answer = %s, want an error for id 1", line)
		}
	})
	t.Run("ignore-unknown swallows", func(t *testing.T) {
		t.Parallel()
		events := testserver.EventsFile(t)
		r := startRawStdio(t, "-ignore-unknown", "-events", events)
		r.send(t, discover)
		r.send(t, ping)
		if line := r.next(t); !strings.Contains(line, `"id":2`) {
			t.Errorf("first answer = %s, want the ping's (id 2)", line)
		}
		e := testserver.WaitEvent(t, events, isEvent("dropped"), opTimeout)
		if e.Method != "server/discover" || e.RequestID != "1" || e.Reason != "ignore-unknown" {
			t.Errorf("dropped event = %+v", e)
		}
	})
	t.Run("probing client hangs", func(t *testing.T) {
		t.Parallel()
		// An unpinned SDK client probes server/discover first and, without
		// its own timeout, would wait forever.
		_, err := tryConnectStdio(t, nil, nil, 500*time.Millisecond, "-ignore-unknown")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("connect = %v, want deadline exceeded", err)
		}
	})
}

func TestStdioProgress(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		progress []*mcp.ProgressNotificationParams
	)
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params)
		},
	}
	srv := connectStdio(t, opts, pinned)
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"duration_ms": 300, "interval_ms": 100}}
	params.SetProgressToken("tok")
	res, err := srv.cs.CallTool(ctxTimeout(t, opTimeout), params)
	if err != nil || resultText(res) != "done after 300ms" {
		t.Fatalf("slow = %v, %v", res, err)
	}
	// Notifications are dispatched separately from the response, so the
	// last one may still be on its way.
	deadline := time.Now().Add(opTimeout)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 3 {
		t.Fatalf("got %d progress notifications, want 3", len(progress))
	}
	for i, p := range progress {
		if p.ProgressToken != "tok" || p.Progress != float64(i+1) || p.Total != 3 || p.Message != fmt.Sprintf("step %d/3", i+1) {
			t.Errorf("progress %d = %+v", i, p)
		}
	}
}

func TestStdioCancel(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	srv := connectStdio(t, nil, pinned, "-events", events)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, srv.cs, "sleep", map[string]any{"ms": 30000})
		errc <- err
	}()
	testserver.WaitEvent(t, events, isToolEvent("call", "sleep"), opTimeout)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("call = %v, want context.Canceled", err)
	}
	testserver.WaitEvent(t, events, func(e testserver.Event) bool {
		return e.Event == "notification" && e.Method == "notifications/cancelled" && e.RequestID != ""
	}, opTimeout)
	testserver.WaitEvent(t, events, isToolEvent("cancelled", "sleep"), opTimeout)
	// The server is still healthy afterwards.
	if got := mustText(t, srv.cs, "echo", map[string]any{"text": "after"}); got != "after" {
		t.Errorf("echo after cancel = %q", got)
	}
}

func TestStdioElicit(t *testing.T) {
	t.Parallel()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message == "no?" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}, nil
		},
	}
	srv := connectStdio(t, opts, pinned)
	if got := mustText(t, srv.cs, "elicit", map[string]any{"message": "answer?"}); got != "answer: 42" {
		t.Errorf("accepted elicit = %q", got)
	}
	if got := mustText(t, srv.cs, "elicit", map[string]any{"message": "no?"}); got != "declined" {
		t.Errorf("declined elicit = %q", got)
	}
}

func TestStdioListChanged(t *testing.T) {
	t.Parallel()
	listChanged := func() (*mcp.ClientOptions, chan struct{}) {
		ch := make(chan struct{}, 100)
		return &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				ch <- struct{}{}
			},
		}, ch
	}
	waitForTool := func(t *testing.T, cs *mcp.ClientSession, ch chan struct{}, name string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(opTimeout):
			t.Fatal("no notifications/tools/list_changed")
		}
		tools, err := cs.ListTools(ctxTimeout(t, opTimeout), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == name }) {
			t.Errorf("tools/list lacks %q after list_changed", name)
		}
	}

	t.Run("add_tool", func(t *testing.T) {
		t.Parallel()
		opts, ch := listChanged()
		srv := connectStdio(t, opts, pinned)
		if got := mustText(t, srv.cs, "add_tool", map[string]any{"name": "zzz"}); got != "added zzz" {
			t.Errorf("add_tool = %q", got)
		}
		waitForTool(t, srv.cs, ch, "zzz")
		if got := mustText(t, srv.cs, "zzz", map[string]any{"text": "dyn"}); got != "dyn" {
			t.Errorf("zzz = %q", got)
		}
	})
	t.Run("list-changed-every", func(t *testing.T) {
		t.Parallel()
		opts, ch := listChanged()
		srv := connectStdio(t, opts, pinned, "-list-changed-every", "50ms")
		waitForTool(t, srv.cs, ch, "dyn_1")
	})
}

func TestStdioPagination(t *testing.T) {
	t.Parallel()
	srv := connectStdio(t, nil, pinned, "-tools", "30", "-page-size", "10")
	ctx := ctxTimeout(t, opTimeout)
	first, err := srv.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != 10 || first.NextCursor == "" {
		t.Errorf("first page: %d tools, cursor %q; want 10 and a cursor", len(first.Tools), first.NextCursor)
	}
	var names []string
	for tool, err := range srv.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) != 46 || !slices.Contains(names, "extra_000") || !slices.Contains(names, "extra_029") {
		t.Errorf("all pages: %d tools %v; want 16 built-in + 30 extra", len(names), names)
	}
}

func TestSpawnChildDiesWithGroup(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	p := testserver.StartHTTP(t, "-spawn-child", "-events", events)
	child := testserver.WaitEvent(t, events, isEvent("child"), opTimeout).PID
	if child == 0 || child == p.PID {
		t.Fatalf("child pid = %d (server %d)", child, p.PID)
	}
	eventually(t, "stderr has the child pid line", func() bool {
		return strings.Contains(p.Stderr(), fmt.Sprintf("testserver: child pid=%d\n", child))
	})
	if !alive(child) {
		t.Fatalf("child %d is not running", child)
	}
	p.Kill()
	deadline := time.Now().Add(opTimeout)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d survived the process group kill", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a live process (a zombie awaiting its reaper
// counts as dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// httpClient returns a client whose idle connections are closed when the
// test ends, so goleak sees no lingering connection goroutines.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func connectHTTP(t *testing.T, transport mcp.Transport, timeout time.Duration) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "testserver-test", Version: "1"}, nil)
	cs, err := client.Connect(ctxTimeout(t, timeout), transport, pinned)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func streamable(t *testing.T, p *testserver.Process) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: p.URL, HTTPClient: httpClient(t), MaxRetries: -1}
}

func mustConnectHTTP(t *testing.T, transport mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, transport, opTimeout)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxTimeout(t, opTimeout), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestHTTPStreamable(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	pidFile := t.TempDir() + "/pid"
	p := testserver.StartHTTP(t, "-events", events, "-pid-file", pidFile)
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || !strings.HasSuffix(p.URL, "/mcp") {
		t.Errorf("URL = %q", p.URL)
	}
	if data, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(p.PID) {
		t.Errorf("pid file = %q, %v; want %d", data, err, p.PID)
	}
	cs := mustConnectHTTP(t, streamable(t, p))
	if got := mustText(t, cs, "echo", map[string]any{"text": "over http"}); got != "over http" {
		t.Errorf("echo = %q", got)
	}
	if got := mustText(t, cs, "pid", nil); got != strconv.Itoa(p.PID) {
		t.Errorf("pid = %q, want %d", got, p.PID)
	}
	if e := testserver.WaitEvent(t, events, isToolEvent("request", "echo"), opTimeout); e.Session != cs.ID() || e.Session == "" {
		t.Errorf("request event session = %q, want %q", e.Session, cs.ID())
	}
	_ = cs.Close()

	// SIGTERM is a clean exit.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, opTimeout); code != 0 {
		t.Errorf("exit status after SIGTERM = %d; stderr:\n%s", code, p.Stderr())
	}
	if e := testserver.WaitEvent(t, events, isEvent("exit"), opTimeout); e.Code != 0 || e.Reason != "signal" {
		t.Errorf("exit event = %+v", e)
	}
}

// TestHTTPShutdownCancelsCalls checks that SIGTERM does not wait for a
// long tool call: the call is cancelled and the server exits promptly.
func TestHTTPShutdownCancelsCalls(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	p := testserver.StartHTTP(t, "-events", events)
	cs := mustConnectHTTP(t, streamable(t, p))
	ctx := ctxTimeout(t, opTimeout)
	errc := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, cs, "sleep", map[string]any{"ms": 60000})
		errc <- err
	}()
	testserver.WaitEvent(t, events, isToolEvent("call", "sleep"), opTimeout)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// It exits on the signal, not when the call's 60 s sleep ends: Wait's
	// bound is far below that.
	if code := p.Wait(t, opTimeout); code != 0 {
		t.Errorf("exit status = %d", code)
	}
	<-errc // the call ends one way or another once the server is gone
	if e := testserver.WaitEvent(t, events, isToolEvent("cancelled", "sleep"), opTimeout); e.Reason != "server shutting down" {
		t.Errorf("cancelled event = %+v", e)
	}
}

func TestHTTPLegacySSE(t *testing.T) {
	t.Parallel()
	p := testserver.StartHTTP(t)
	cs := mustConnectHTTP(t, &mcp.SSEClientTransport{Endpoint: p.BaseURL + "/sse", HTTPClient: httpClient(t)})
	if got := mustText(t, cs, "echo", map[string]any{"text": "sse"}); got != "sse" {
		t.Errorf("echo = %q", got)
	}
}

func TestHTTPSSEOnly(t *testing.T) {
	t.Parallel()
	p := testserver.StartHTTP(t, "-sse-only")
	if resp := post(t, p.URL, initializeBody); resp.StatusCode != http.StatusNotFound {
		t.Errorf("Streamable POST = %s, want 404", resp.Status)
	}
	// A client that falls back to SSE on the same URL works.
	cs := mustConnectHTTP(t, &mcp.SSEClientTransport{Endpoint: p.URL, HTTPClient: httpClient(t)})
	if got := mustText(t, cs, "echo", map[string]any{"text": "fallback"}); got != "fallback" {
		t.Errorf("echo = %q", got)
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	for _, code := range []int{401, 403, 429, 500} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			p := testserver.StartHTTP(t, "-status", strconv.Itoa(code))
			resp := post(t, p.URL, initializeBody)
			if resp.StatusCode != code {
				t.Errorf("POST /mcp = %s, want %d", resp.Status, code)
			}
			if auth := resp.Header.Get("WWW-Authenticate"); (code == 401) != strings.HasPrefix(auth, "Bearer") {
				t.Errorf("WWW-Authenticate = %q", auth)
			}
			req, _ := http.NewRequestWithContext(ctxTimeout(t, opTimeout), http.MethodGet, p.BaseURL+"/sse", nil)
			resp, err := httpClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != code {
				t.Errorf("GET /sse = %s, want %d", resp.Status, code)
			}
			if _, err := connectHTTP(t, streamable(t, p), opTimeout); err == nil {
				t.Error("client connected despite -status")
			}
		})
	}
}

func TestHTTPDropAfter(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	p := testserver.StartHTTP(t, "-drop-after", "2", "-events", events)
	cs := mustConnectHTTP(t, streamable(t, p))
	for i := range 2 {
		mustText(t, cs, "echo", map[string]any{"text": strconv.Itoa(i)})
	}
	if _, err := callTool(ctxTimeout(t, opTimeout), cs, "echo", map[string]any{"text": "3"}); err == nil {
		t.Error("call on a dropped session succeeded")
	}
	if e := testserver.WaitEvent(t, events, isEvent("drop"), opTimeout); e.Reason != "drop-after" {
		t.Errorf("drop event = %+v", e)
	}
	// The old session id is gone for good: 404.
	req, _ := http.NewRequestWithContext(ctxTimeout(t, opTimeout), http.MethodPost, p.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST with the dropped session id = %s, want 404", resp.Status)
	}
	// A new session works.
	cs2 := mustConnectHTTP(t, streamable(t, p))
	if got := mustText(t, cs2, "echo", map[string]any{"text": "again"}); got != "again" {
		t.Errorf("echo on a new session = %q", got)
	}
}

func TestHTTPAdmin(t *testing.T) {
	t.Parallel()
	p := testserver.StartHTTP(t)
	admin := func(op string) {
		t.Helper()
		if resp := post(t, p.BaseURL+"/admin/"+op, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("/admin/%s = %s", op, resp.Status)
		}
	}

	cs := mustConnectHTTP(t, streamable(t, p))
	mustText(t, cs, "echo", map[string]any{"text": "before"})
	admin("drop")
	if _, err := callTool(ctxTimeout(t, opTimeout), cs, "echo", map[string]any{"text": "x"}); err == nil {
		t.Error("call after /admin/drop succeeded")
	}

	admin("blackhole")
	if _, err := connectHTTP(t, streamable(t, p), 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("connect while blackholed = %v, want deadline exceeded", err)
	}
	admin("heal")
	cs2 := mustConnectHTTP(t, streamable(t, p))
	if got := mustText(t, cs2, "echo", map[string]any{"text": "healed"}); got != "healed" {
		t.Errorf("echo after heal = %q", got)
	}
}

func TestHTTPMalformed(t *testing.T) {
	t.Parallel()
	p := testserver.StartHTTP(t, "-malformed")
	cs := mustConnectHTTP(t, streamable(t, p))
	if _, err := cs.ListTools(ctxTimeout(t, opTimeout), nil); err == nil {
		t.Error("tools/list succeeded despite a malformed body")
	}
}

func TestHTTPHangInitialize(t *testing.T) {
	t.Parallel()
	events := testserver.EventsFile(t)
	p := testserver.StartHTTP(t, "-hang-initialize", "-events", events)
	if _, err := connectHTTP(t, streamable(t, p), 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("connect = %v, want deadline exceeded", err)
	}
	if e := testserver.WaitEvent(t, events, isEvent("dropped"), opTimeout); e.Reason != "hang-initialize" {
		t.Errorf("dropped event = %+v", e)
	}
}

func TestHTTPIgnoreUnknown(t *testing.T) {
	t.Parallel()
	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	p := testserver.StartHTTP(t, "-ignore-unknown")
	req, _ := http.NewRequestWithContext(ctxTimeout(t, 300*time.Millisecond), http.MethodPost, p.URL, strings.NewReader(discover))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := httpClient(t).Do(req); err == nil {
		_ = resp.Body.Close()
		t.Errorf("server/discover answered %s", resp.Status)
	}
	// Methods it knows still work.
	cs := mustConnectHTTP(t, streamable(t, p))
	mustText(t, cs, "echo", map[string]any{"text": "known"})

	// Without the flag the same request is answered at once.
	plain := testserver.StartHTTP(t)
	resp := post(t, plain.URL, discover)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"id":1`)) {
		t.Errorf("plain server answered server/discover with %s %q", resp.Status, body)
	}
}

func TestHTTPCrashAfter(t *testing.T) {
	t.Parallel()
	p := testserver.StartHTTP(t, "-crash-after", "1")
	cs := mustConnectHTTP(t, streamable(t, p))
	mustText(t, cs, "echo", map[string]any{"text": "one"})
	if _, err := callTool(ctxTimeout(t, opTimeout), cs, "echo", map[string]any{"text": "two"}); err == nil {
		t.Error("second call succeeded")
	}
	if code := p.Wait(t, opTimeout); code != 3 {
		t.Errorf("exit status = %d, want 3", code)
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-transport", "carrier-pigeon"},
		{"-no-such-flag"},
		{"-crash-after", "x"},
		{"-status", "401"}, // http only
		{"-transport", "http", "-listen", "0.0.0.0:0"},
		{"-transport", "http", "-listen", ":0"},
		{"-transport", "http", "-status", "42"},
		{"-protocol-versions", "1999-01-01"},
		{"stray-argument"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := testserver.Command(t, args...)
			var stderr testserver.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
				t.Errorf("run = %v, want exit status 2", err)
			}
			if !strings.Contains(stderr.String(), "usage: testserver") {
				t.Errorf("stderr lacks usage:\n%s", stderr.String())
			}
		})
	}
}
