// Package testserver is a fault-injecting MCP server that tests and
// benchmarks run as a real process (see cmd/testserver), plus a harness
// (harness.go) for starting it from tests in other packages.
//
// With no flags it is a well-behaved MCP server named "testserver" that
// speaks newline-delimited JSON-RPC on stdin/stdout. Flags switch on one
// misbehaviour each (crashing, hanging, malformed output, HTTP status codes,
// dropped sessions, ...), so a test can say exactly which failure it wants to
// see the client survive. Everything the server observes can be appended to
// an events file (-events) that tests read back with [ReadEvents] and
// [WaitEvent].
//
// Diagnostics go to stderr as lines starting with "testserver: ": one at
// start ("started pid=N transport=T") and one per tool call ("call TOOL").
package testserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures the test server. The zero value is a well-behaved stdio
// server; each field corresponds to one command-line flag of the same name.
type Options struct {
	// Name and Version are the advertised server implementation
	// (-name, -server-version). Defaults: "testserver", "1.0.0".
	Name    string
	Version string

	// Transport is "stdio" (the default when empty) or "http" (-transport).
	Transport string
	// Listen is the HTTP listen address (-listen), default "127.0.0.1:0".
	// Only loopback hosts are accepted: this server must never be reachable
	// from outside the machine running the tests.
	Listen string
	// PIDFile, if set, receives the server's pid (-pid-file).
	PIDFile string
	// EventsFile, if set, receives one JSON [Event] per line (-events).
	EventsFile string
	// StderrLines makes the server write this many numbered lines to stderr
	// at start (-stderr-lines), for log ring-buffer tests.
	StderrLines int
	// Tools registers this many extra echo tools extra_000... (-tools).
	Tools int
	// ResourceTemplate, if set, registers one more resource template
	// (-resource-template), whose reads answer "NAME: URI" with the
	// server's -name.
	ResourceTemplate string
	// Resource, if set, registers one more resource (-resource), whose
	// read answers "NAME: URI" with the server's -name.
	Resource string
	// PageSize sets the SDK's list page size, 0 meaning the SDK default
	// (-page-size).
	PageSize int
	// ProtocolVersions, if non-empty, narrows the protocol versions the
	// server negotiates (-protocol-versions), e.g. to act as a server that
	// predates 2026-07-28.
	ProtocolVersions []string
	// PrivateCache marks every result that carries cache hints
	// (server/discover, the lists, resources/read) cacheScope "private"
	// with a ttlMs of 60000 (-private-cache), as a server whose results
	// depend on who asks does.
	PrivateCache bool
	// CacheTTL, if positive, is the ttlMs of every result that carries
	// cache hints (-cache-ttl), cacheScope public unless PrivateCache (whose
	// ttlMs it replaces).
	CacheTTL int

	// Faults.

	// CrashAfter, if non-nil, lets this many tools/call requests through;
	// the next one makes the process exit with status 3 before replying
	// (-crash-after).
	CrashAfter *int
	// ExitAtStartup, if non-nil, makes the process exit with this status
	// before reading anything (-exit-at-startup).
	ExitAtStartup *int
	// ExitAtStartupUnless makes the process exit with status 1 at startup
	// unless this file exists (-exit-at-startup-unless): a server that is
	// broken until a test "repairs" it by creating the file.
	ExitAtStartupUnless string
	// StartupDelay is slept before serving, without reading stdin or
	// listening (-startup-delay); it simulates an npx/uvx cold start.
	StartupDelay time.Duration
	// HangInitialize swallows initialize requests (-hang-initialize).
	HangInitialize bool
	// HangToolsList swallows tools/list requests (-hang-tools-list): the
	// server connects but never lists its tools.
	HangToolsList bool
	// IgnoreUnknown swallows requests for methods outside MCP 2025-11-25
	// instead of answering "method not found" (-ignore-unknown).
	IgnoreUnknown bool
	// SSEOnly makes /mcp a legacy SSE endpoint (-sse-only, http only).
	SSEOnly bool
	// NoKeepAlive closes every HTTP connection after its response
	// (-no-keepalive, http only), so that no request of a client rides a
	// connection opened before: once the server is gone, every request is
	// refused a connection, none is written to one that died with it.
	NoKeepAlive bool
	// JSONResponse answers every Streamable HTTP POST with one JSON body
	// instead of an event stream (-json-response, http only).
	JSONResponse bool
	// Stateless serves Streamable HTTP without sessions, as the go-sdk's
	// stateless handler does (-stateless, http only): the only mode in
	// which it serves the 2026-07-28 protocol.
	Stateless bool
	// MaxRequestBody, if non-zero, is the go-sdk's limit on a POSTed
	// body (-max-request-body, http only; its default is 4 MiB): a POST
	// over it is answered 413, as the go-sdk's servers do.
	MaxRequestBody int64
	// Status, if non-zero, answers every /mcp and /sse request with this HTTP
	// status (-status, http only).
	Status int
	// DropAfter, if non-zero, forgets every HTTP session once this many
	// tools/call requests have completed (-drop-after, http only). It fires
	// once, on the first HTTP request after the Nth completed call.
	DropAfter int
	// Malformed makes the server emit invalid JSON (-malformed): on stdio a
	// line right after the initialize response, over HTTP as the response to
	// tools/list.
	Malformed bool
	// ListChangedEvery adds a tool dyn_N at this interval, so that clients
	// receive notifications/tools/list_changed (-list-changed-every).
	ListChangedEvery time.Duration
	// Roots registers the tool "roots", which asks the client for its
	// roots (roots/list) and returns their URIs, and the prompt
	// "ask_prompt", which asks the client a question (elicitation/create)
	// and puts the answer in its message (-roots).
	Roots bool
	// AskResource registers the resource "test://ask", whose read asks the
	// client a question in the 2026-07-28 protocol's form (a request for
	// input as the result; a 2025-11-25 client with elicitation/create
	// during the read) and answers "answer: ..." (-ask-resource).
	AskResource bool
	// SpawnChild starts a grandchild "sleep 300" in the server's own process
	// group (-spawn-child), to prove that killing the group reaps it.
	SpawnChild bool
	// Tasks serves the 2026-07-28 protocol with the Tasks extension from
	// a raw JSON-RPC server instead of the go-sdk's (-tasks; tasks.go).
	Tasks bool
}

// usageHeader precedes the flag list in usage output.
const usageHeader = `usage: testserver [flags]

testserver is a fault-injecting MCP server for tests. Without flags it is a
well-behaved server on stdio; each flag below switches on one behaviour.

`

// Main parses args as command-line flags and runs the server until it exits,
// returning the process exit status: 2 for a usage error, otherwise whatever
// [Run] returns.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	return Run(opts, stdin, stdout, stderr)
}

// parseFlags turns args into Options. Errors have already been reported to
// stderr, with the usage message, when it returns.
func parseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("testserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}

	var protocolVersions string
	fs.StringVar(&o.Name, "name", "testserver", "advertised server `name`")
	fs.StringVar(&o.Version, "server-version", "1.0.0", "advertised server `version`")
	fs.StringVar(&o.Transport, "transport", "stdio", "`transport`: stdio or http")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "http listen `address`, loopback only")
	fs.StringVar(&o.PIDFile, "pid-file", "", "write the server's pid to `path`")
	fs.StringVar(&o.EventsFile, "events", "", "append one JSON event per line to `path`")
	fs.IntVar(&o.StderrLines, "stderr-lines", 0, "write `N` numbered lines to stderr at start")
	fs.IntVar(&o.Tools, "tools", 0, "register `N` extra echo tools extra_000...")
	fs.StringVar(&o.Resource, "resource", "", "register one more resource `URI`, whose read answers \"NAME: URI\" with the -name")
	fs.StringVar(&o.ResourceTemplate, "resource-template", "", "register one more resource `template`, whose reads answer \"NAME: URI\" with the -name")
	fs.BoolVar(&o.PrivateCache, "private-cache", false, "mark results with cache hints cacheScope private, ttlMs 60000")
	fs.IntVar(&o.CacheTTL, "cache-ttl", 0, "mark results with cache hints ttlMs `ms` (cacheScope public unless -private-cache)")
	fs.IntVar(&o.PageSize, "page-size", 0, "page `size` of list results (default: the SDK default)")
	fs.StringVar(&protocolVersions, "protocol-versions", "", "negotiate only these comma-separated protocol `versions` (default: all the SDK supports)")
	fs.Var(optionalInt{&o.CrashAfter}, "crash-after", "let `N` tools/call requests through, exit with status 3 on the next one")
	fs.Var(optionalInt{&o.ExitAtStartup}, "exit-at-startup", "exit with status `CODE` before reading anything")
	fs.StringVar(&o.ExitAtStartupUnless, "exit-at-startup-unless", "", "exit with status 1 at startup unless `path` exists")
	fs.DurationVar(&o.StartupDelay, "startup-delay", 0, "sleep this `duration` before serving")
	fs.BoolVar(&o.HangToolsList, "hang-tools-list", false, "never answer tools/list")
	fs.BoolVar(&o.HangInitialize, "hang-initialize", false, "never answer initialize")
	fs.BoolVar(&o.IgnoreUnknown, "ignore-unknown", false, "never answer requests for methods outside MCP 2025-11-25")
	fs.BoolVar(&o.SSEOnly, "sse-only", false, "http: serve legacy SSE on /mcp; POST /mcp without sessionid is 404")
	fs.BoolVar(&o.NoKeepAlive, "no-keepalive", false, "http: close every connection after its response")
	fs.BoolVar(&o.JSONResponse, "json-response", false, "http: answer Streamable HTTP POSTs with one JSON body, not an event stream")
	fs.BoolVar(&o.Stateless, "stateless", false, "http: serve Streamable HTTP statelessly (the go-sdk serves 2026-07-28 only so)")
	fs.Int64Var(&o.MaxRequestBody, "max-request-body", 0, "http: answer a POST whose body is over `N` bytes with the go-sdk's 413 (default: the go-sdk's 4 MiB)")
	fs.IntVar(&o.Status, "status", 0, "http: answer every /mcp and /sse request with this HTTP status `code`")
	fs.IntVar(&o.DropAfter, "drop-after", 0, "http: forget all sessions after `N` completed tools/call requests")
	fs.BoolVar(&o.Malformed, "malformed", false, "stdio: invalid JSON line after initialize; http: invalid tools/list response")
	fs.DurationVar(&o.ListChangedEvery, "list-changed-every", 0, "add a tool dyn_N at this `interval`")
	fs.BoolVar(&o.AskResource, "ask-resource", false, "register the resource test://ask, whose read asks the client for input")
	fs.BoolVar(&o.Roots, "roots", false, "register the tool roots (asks roots/list) and the prompt ask_prompt (asks elicitation/create)")
	fs.BoolVar(&o.SpawnChild, "spawn-child", false, "spawn a grandchild 'sleep 300' in the server's process group")
	fs.BoolVar(&o.Tasks, "tasks", false, "serve 2026-07-28 with the io.modelcontextprotocol/tasks extension from a raw JSON-RPC server (tasks.go)")

	if err := fs.Parse(args); err != nil {
		return o, err // the flag package has printed the error and usage
	}
	if protocolVersions != "" {
		o.ProtocolVersions = strings.Split(protocolVersions, ",")
	}
	err := o.validate()
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err == nil {
		// Flags only meaningful over HTTP are an error with stdio, so that a
		// test that forgets -transport http fails loudly instead of silently
		// testing a well-behaved server.
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "listen", "sse-only", "no-keepalive", "json-response", "max-request-body", "status", "drop-after":
				if o.Transport != "http" && err == nil {
					err = fmt.Errorf("-%s requires -transport http", f.Name)
				}
			}
			if o.Tasks && !slices.Contains(tasksFlags, f.Name) && err == nil {
				err = fmt.Errorf("-%s is not served with -tasks", f.Name)
			}
		})
	}
	if err != nil {
		fmt.Fprintf(stderr, "testserver: %v\n", err)
		fs.Usage()
		return o, err
	}
	return o, nil
}

// optionalInt is a flag.Value for *int fields, where nil means "not given"
// and therefore 0 stays a meaningful value (e.g. -exit-at-startup 0).
type optionalInt struct{ p **int }

func (o optionalInt) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.Itoa(**o.p)
}

func (o optionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	*o.p = &n
	return nil
}

// validate reports the first inconsistent option.
func (o *Options) validate() error {
	switch o.Transport {
	case "", "stdio", "http":
	default:
		return fmt.Errorf("-transport must be stdio or http, not %q", o.Transport)
	}
	if o.Listen != "" {
		if err := checkLoopback(o.Listen); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		name  string
		value int
	}{
		{"stderr-lines", o.StderrLines}, {"tools", o.Tools}, {"page-size", o.PageSize}, {"drop-after", o.DropAfter},
	} {
		if c.value < 0 {
			return fmt.Errorf("-%s must not be negative", c.name)
		}
	}
	if o.MaxRequestBody < 0 {
		return errors.New("-max-request-body must not be negative")
	}
	if o.CrashAfter != nil && *o.CrashAfter < 0 {
		return errors.New("-crash-after must not be negative")
	}
	if o.ExitAtStartup != nil && (*o.ExitAtStartup < 0 || *o.ExitAtStartup > 255) {
		return errors.New("-exit-at-startup must be in 0..255")
	}
	if o.StartupDelay < 0 || o.ListChangedEvery < 0 {
		return errors.New("durations must not be negative")
	}
	if o.Status != 0 && (o.Status < 100 || o.Status > 599) {
		return fmt.Errorf("-status %d is not an HTTP status code", o.Status)
	}
	supported := mcp.SupportedProtocolVersions()
	for _, v := range o.ProtocolVersions {
		if !slices.Contains(supported, v) {
			return fmt.Errorf("-protocol-versions: %q is not one of %s", v, strings.Join(supported, ","))
		}
	}
	return nil
}

// checkLoopback rejects listen addresses that would expose the server beyond
// the local machine (including an empty host, which means all interfaces).
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: host must be a loopback address", addr)
	}
	return nil
}

// server is one running test server: the options, the SDK server, and the
// state the faults need.
type server struct {
	opts   Options
	stdout io.Writer // protocol (stdio) or announce line (http)
	stderr *lineWriter
	events *eventLog
	pid    int
	mcp    *mcp.Server

	// ctx is cancelled when the server shuts down (signal, or Run
	// returning); tool handlers are cancelled with it so that shutdown never
	// waits for a long sleep.
	ctx context.Context

	calls     atomic.Int64           // tools/call requests dispatched so far
	completed atomic.Int64           // tools/call requests whose handler returned
	dynTools  atomic.Int64           // tools added by -list-changed-every
	initID    atomic.Pointer[string] // raw JSON-RPC id of the last initialize

	// exit terminates the process; a field so the deliberate exits are easy
	// to find and all go through die.
	exit func(code int)
}

// Run runs a server configured by opts until it exits and returns the exit
// status. Some faults (crash, -crash-after) terminate the process directly
// with os.Exit instead of returning.
func Run(opts Options, stdin io.Reader, stdout, stderr io.Writer) int {
	if opts.Transport == "" {
		opts.Transport = "stdio"
	}
	if opts.Name == "" {
		opts.Name = "testserver"
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	errOut := &lineWriter{w: stderr}
	if err := opts.validate(); err != nil {
		errOut.printf("testserver: %v", err)
		return 2
	}
	events, err := openEventLog(opts.EventsFile)
	if err != nil {
		errOut.printf("testserver: %v", err)
		return 1
	}
	defer events.close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	s := &server{
		opts:   opts,
		stdout: stdout,
		stderr: errOut,
		events: events,
		pid:    os.Getpid(),
		ctx:    ctx,
		exit:   os.Exit,
	}

	if opts.PIDFile != "" {
		if err := os.WriteFile(opts.PIDFile, []byte(strconv.Itoa(s.pid)+"\n"), 0o644); err != nil {
			s.logf("writing pid file: %v", err)
			return 1
		}
	}
	s.logf("started pid=%d transport=%s", s.pid, opts.Transport)
	s.events.record(Event{Event: "start", Transport: opts.Transport})
	for i := 1; i <= opts.StderrLines; i++ {
		s.logf("stderr line %d", i)
	}
	if opts.SpawnChild {
		if err := s.spawnChild(); err != nil {
			s.logf("spawning child: %v", err)
			return 1
		}
	}
	if opts.ExitAtStartup != nil {
		s.logf("exiting at startup")
		return s.exitCode(*opts.ExitAtStartup, "exit-at-startup")
	}
	if p := opts.ExitAtStartupUnless; p != "" {
		if _, err := os.Stat(p); err != nil {
			s.logf("exiting at startup: %s does not exist", p)
			return s.exitCode(1, "exit-at-startup-unless")
		}
	}
	if opts.StartupDelay > 0 {
		select {
		case <-time.After(opts.StartupDelay):
		case <-ctx.Done():
			return s.exitCode(0, "signal")
		}
	}

	if opts.Tasks {
		code, reason := s.runTasks(stdin)
		return s.exitCode(code, reason)
	}
	s.mcp = s.newMCPServer()
	if opts.ListChangedEvery > 0 {
		go s.addToolsPeriodically(opts.ListChangedEvery)
	}

	var code int
	var reason string
	if opts.Transport == "http" {
		code, reason = s.runHTTP()
	} else {
		code, reason = s.runStdio(stdin)
	}
	return s.exitCode(code, reason)
}

// spawnChild starts "sleep 300" without Setpgid, so it lives in the server's
// process group. It is deliberately not killed when the server exits: it
// plays the leaked grandchild that only a process-group kill cleans up. Its
// stdio is /dev/null so that it holds none of the server's pipes open.
func (s *server) spawnChild() error {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it if it dies while we live
	s.logf("child pid=%d", cmd.Process.Pid)
	s.events.record(Event{Event: "child", PID: cmd.Process.Pid})
	return nil
}

// exitCode records a deliberate exit that happens by returning from Run.
func (s *server) exitCode(code int, reason string) int {
	s.logf("exit code=%d reason=%s", code, reason)
	s.events.record(Event{Event: "exit", Code: code, Reason: reason})
	return code
}

// die records a deliberate exit and terminates the process at once, without
// answering anything still in flight.
func (s *server) die(code int, reason string) {
	s.exitCode(code, reason)
	s.exit(code)
}

// logf writes one "testserver: ..." diagnostic line to stderr.
func (s *server) logf(format string, args ...any) {
	s.stderr.printf("testserver: "+format, args...)
}

// lineWriter serializes whole-line writes from concurrent goroutines, so
// that diagnostic lines never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.writeString(fmt.Sprintf(format, args...) + "\n")
}

func (l *lineWriter) writeString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s)
}

// prefixWriter prefixes each Write, which slog issues once per record, and
// hands it to a lineWriter as one piece.
type prefixWriter struct {
	prefix string
	w      *lineWriter
}

func (p prefixWriter) Write(b []byte) (int, error) {
	p.w.writeString(p.prefix + string(b))
	return len(b), nil
}
