// Package upstream owns Switchboard's client sessions to MCP servers: one
// [Session] per configured server, for the server's whole life.
//
// A Session connects over stdio (a child process in its own process group)
// or HTTP (Streamable HTTP, falling back to legacy SSE), lists the server's
// tools, resources and prompts, keeps them fresh on list_changed, watches the
// connection (process exit at once, an HTTP health probe on an interval),
// reconnects transparently when a connected session drops, and retries
// failed attempts with bounded backoff. Its state is a small machine
// (machine.go) driven by one lifecycle goroutine that the Session owns.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/sandbox"
)

// Defaults for [Options] fields whose zero value means "the default".
const (
	DefaultHealthInterval  = 30 * time.Second
	DefaultProbeTimeout    = 10 * time.Second
	DefaultFlapWindow      = 10 * time.Second
	DefaultStableAfter     = 2 * time.Minute
	DefaultShutdownTimeout = 5 * time.Second
)

// Options tune a Session beyond its config. The zero value is ready to use.
type Options struct {
	// Logger receives the session's status changes, with the server name and
	// phase as attributes. Nil means slog.Default().
	Logger *slog.Logger
	// OnEvent is called for every change of the session (see sb.Event). It is
	// called from the session's lifecycle goroutine, in order, and must not
	// block.
	OnEvent func(sb.Event)
	// OnNotification, if set, receives the server's notifications that are
	// not about one call: *mcp.LoggingMessageParams and
	// *mcp.ResourceUpdatedNotificationParams. It runs on the session's
	// notification goroutine and must not block.
	OnNotification func(server string, params mcp.Params)
	// ClientInfo is how the session introduces itself in initialize. The zero
	// value means {Name: "switchboard"}.
	ClientInfo mcp.Implementation

	// HealthInterval is the period of the health probe (every transport).
	// If zero, DefaultHealthInterval is used; negative disables the probe.
	HealthInterval time.Duration
	// ProbeTimeout bounds one health probe and one list refresh. If zero,
	// DefaultProbeTimeout is used.
	ProbeTimeout time.Duration
	// FlapWindow: a session that drops again within this long of a
	// transparent reconnect is flapping and goes through backoff. If zero,
	// DefaultFlapWindow is used.
	FlapWindow time.Duration
	// StableAfter: a connection that stays up this long resets the
	// fast-retry budget. If zero, DefaultStableAfter is used.
	StableAfter time.Duration
	// LogLines is how many stderr lines of a stdio server are kept. If zero,
	// DefaultLogLines is used.
	LogLines int
	// Dial, if set, replaces the config's transport: every attempt speaks
	// newline-delimited JSON-RPC over the byte stream it returns, which the
	// session closes. It is for embedding an in-process MCP server (and for
	// tests that need one, such as testing/synctest tests, where a real
	// process would stop the fake clock). RuntimeInfo reports the transport
	// as "in-process".
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)
	// MaxResultBytes caps the size of one tool result (its text, binary
	// data and structured content); a larger result fails with
	// ErrResultTooLarge. With 1 MiB more for the envelope, it also bounds
	// what is read of any one message: a JSON-RPC frame over stdio, a
	// JSON answer or a server-sent event over HTTP. If zero,
	// DefaultMaxResultBytes is used.
	MaxResultBytes int
	// Egress is where a remote server may be dialed: by default not to
	// link-local addresses (169.254.0.0/16, fe80::/10), the cloud
	// metadata services inside and outside them (169.254.169.254,
	// fd00:ec2::254, 100.100.100.200, 168.63.129.16) nor the unspecified
	// addresses (0.0.0.0, ::), less what its allow-list re-allows
	// (egress.NewPolicy). Loopback and private networks are always
	// allowed. The address is checked as it is dialed, after resolution.
	// Sessions that share a Policy share its connection pool. Nil means
	// the default policy, with a pool of the session's own.
	Egress *egress.Policy
	// Instance is the Switchboard instance the session's requests come
	// from (egress.ViaHeader): a server that is that instance itself, or
	// leads back to it, refuses them. Nil means an instance of the
	// session's own, which no endpoint of this process checks: a process
	// that serves /mcp gives its sessions the instance its endpoint checks.
	Instance *egress.Instance
	// Sandbox runs in bubblewrap the stdio servers whose config asks for a
	// sandbox, and with SandboxDefault those whose config has none (see
	// package sandbox). Nil means sandbox.System.
	Sandbox *sandbox.Runtime
	// SandboxDefault applies the documented default profile to stdio
	// servers whose config has no "sandbox" field: sandboxed where
	// bubblewrap works. The zero value runs them as they ran before
	// sandboxes existed, so that embedders and tests opt in; the daemon's
	// commands (serve, stdio, check) set it.
	SandboxDefault bool
	// OAuth is the OAuth client of remote servers whose config has an
	// "oauth" block (package oauthclient; oauthsession.go). Nil: such
	// servers fail with phase auth, code authorization_required.
	OAuth *oauthclient.Client
}

// DefaultMaxResultBytes is the default cap on one tool result.
const DefaultMaxResultBytes = 16 << 20

// frameOverhead is the room a stdio frame gets beyond MaxResultBytes for
// the JSON-RPC envelope and the escaping of the payload.
const frameOverhead = 1 << 20

func (o *Options) withDefaults() Options {
	v := *o
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	if v.ClientInfo.Name == "" {
		v.ClientInfo = mcp.Implementation{Name: "switchboard", Version: "dev"}
	}
	def := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	def(&v.HealthInterval, DefaultHealthInterval)
	def(&v.ProbeTimeout, DefaultProbeTimeout)
	def(&v.FlapWindow, DefaultFlapWindow)
	def(&v.StableAfter, DefaultStableAfter)
	if v.MaxResultBytes <= 0 {
		v.MaxResultBytes = DefaultMaxResultBytes
	}
	if v.Egress == nil {
		v.Egress = egress.NewPolicy(nil)
	}
	if v.Instance == nil {
		v.Instance = egress.NewInstance()
	}
	return v
}

// Session is the long-lived client session to one MCP server.
//
// Create it with New, call Start once (further calls wait on the same
// lifecycle), and Shutdown when done. All methods are safe for concurrent
// use. A Session is not reusable after Shutdown: create a new one.
type Session struct {
	cfg    *sb.ServerConfig // immutable
	bad    *failure         // non-nil if cfg is invalid: every attempt fails with it
	opts   Options
	log    *slog.Logger
	redact *sb.Redactor
	logs   *LogBuffer

	runCtx    context.Context // ends at Shutdown
	runCancel context.CancelFunc
	startOnce sync.Once
	started   chan struct{} // closed by the first Start
	done      chan struct{} // closed when the lifecycle goroutine has returned
	restart   chan struct{} // restart requests, coalesced (buffer 1)
	retryNow  chan struct{} // RetryNow requests, coalesced (buffer 1); heard only while waiting

	mu      sync.Mutex
	m       machine
	link    *link // the live connection, nil unless connected
	catalog catalog
	changed chan struct{} // closed and replaced on every change, for waiters

	subs     map[string]int // resource subscriptions by URI, counted; guarded by mu
	calls    calls          // calls in flight that want progress or elicitation
	inflight atomic.Int64   // every call in flight

	// Call defaults, changeable without a reconnect (SetCallDefaults).
	callTimeout     atomic.Int64 // time.Duration
	maxTotalTimeout atomic.Int64 // time.Duration

	caps        capSet      // what the session declares in initialize (capset.go)
	parent      *Session    // the server's own session, if this is one of its capability sets'
	capSessions capSessions // the sessions of other capability sets (capset.go); none for a capability set's own
}

// New returns a Session for cfg that has not started. cfg must be valid
// (see sb.ServerConfig.Validate); New keeps its own copy.
func New(cfg *sb.ServerConfig, opts *Options) *Session {
	if opts == nil {
		opts = &Options{}
	}
	o := opts.withDefaults()
	cfg = cfg.Clone()
	delays := cfg.RetryDelays()
	s := &Session{
		cfg:      cfg,
		opts:     o,
		log:      o.Logger.With("server", cfg.Name),
		redact:   sb.NewRedactor(cfg),
		logs:     NewLogBuffer(o.LogLines),
		started:  make(chan struct{}),
		done:     make(chan struct{}),
		restart:  make(chan struct{}, 1),
		retryNow: make(chan struct{}, 1),
		changed:  make(chan struct{}),
		subs:     make(map[string]int),
		caps:     capDefault,
		m: machine{
			status: sb.StatusConnecting,
			p: policy{
				maxAttempts: cfg.MaxAttempts(),
				delays:      delays,
				slowFirst:   cfg.SlowRetry(),
				slowMax:     max(sb.MaxSlowRetry, cfg.SlowRetry()),
				flapWindow:  o.FlapWindow,
				stableAfter: o.StableAfter,
				jitter:      defaultJitter,
			},
		},
	}
	// A server may print its own secrets (a key from its env) on stderr;
	// the lines are shown by the logs route and test results.
	s.logs.redact = s.redact.String
	if !cfg.IsEnabled() {
		s.m.status = sb.StatusDisabled
	}
	if err := cfg.Validate(); err != nil {
		s.bad = fail(sb.PhaseConfig, sb.CodeInvalidConfig, retryNever, err, "%v", err).scrubbed(s.redact)
	}
	s.SetCallDefaults(cfg.CallTimeout(), cfg.MaxTotalTimeout())
	s.runCtx, s.runCancel = context.WithCancel(context.Background())
	return s
}

// SetCallDefaults changes the timeouts a call gets when its InvokeOptions
// set none (the config's call_timeout_ms and max_total_timeout_ms), without
// touching the connection.
func (s *Session) SetCallDefaults(callTimeout, maxTotalTimeout time.Duration) {
	s.callTimeout.Store(int64(callTimeout))
	s.maxTotalTimeout.Store(int64(maxTotalTimeout))
	s.capSessions.each(func(sub *Session) { sub.SetCallDefaults(callTimeout, maxTotalTimeout) })
}

// Name returns the server's name.
func (s *Session) Name() string { return s.cfg.Name }

// Config returns a copy of the session's config.
func (s *Session) Config() *sb.ServerConfig { return s.cfg.Clone() }

// Logs returns the kept stderr lines of a stdio server, oldest first.
func (s *Session) Logs() []string { return s.logs.Lines() }

// Start launches the session's lifecycle goroutine, once, and waits until
// the session is connected, has failed terminally (status error), or the
// startup timeout has passed, whichever comes first; or until ctx ends.
//
// It returns nil when connected. On a startup timeout it returns an error
// wrapping ErrStartupTimeout and the session keeps trying in the
// background. A second Start never starts a second lifecycle: it waits in
// the same way on the one that runs.
func (s *Session) Start(ctx context.Context) error {
	if !s.cfg.IsEnabled() {
		return ErrDisabled
	}
	s.launch()
	if s.runCtx.Err() != nil {
		return ErrShutdown
	}
	timeout := s.cfg.StartupTimeout()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		status, err, ch := s.m.status, s.m.err, s.changed
		s.mu.Unlock()
		switch {
		case status == sb.StatusConnected:
			return nil
		case status == sb.StatusError:
			return s.asError(err)
		}
		select {
		case <-ch:
		case <-s.done:
			return ErrShutdown
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			s.mu.Lock()
			s.m.startupTimedOut = true
			err := s.m.err
			s.mu.Unlock()
			msg := fmt.Sprintf("not connected within the %s startup timeout; still trying in the background", timeout)
			if err != nil {
				msg += "; last error: " + err.Message
			}
			s.log.Warn("startup timeout", "timeout", timeout)
			return &Error{Server: s.cfg.Name, Phase: phaseOf(err, sb.PhaseInitialize), Code: sb.CodeStartupTimeout,
				Message: msg, err: ErrStartupTimeout}
		}
	}
}

// launch starts the lifecycle goroutine, once, without waiting.
func (s *Session) launch() {
	s.startOnce.Do(func() {
		close(s.started)
		if s.runCtx.Err() != nil { // Shutdown came first
			close(s.done)
			return
		}
		go s.run()
	})
}

func phaseOf(e *sb.ErrorInfo, def sb.Phase) sb.Phase {
	if e != nil {
		return e.Phase
	}
	return def
}

func (s *Session) asError(e *sb.ErrorInfo) error {
	if e == nil {
		return &Error{Server: s.cfg.Name, Phase: sb.PhaseRuntime, Code: sb.CodeNotConnected, Message: "not connected", err: ErrUnavailable}
	}
	return &Error{Server: s.cfg.Name, Phase: e.Phase, Code: e.Code, Message: e.Message, err: ErrUnavailable}
}

// Restart drops the current connection, if any, and connects again at once
// with a fresh retry budget. It does not wait.
func (s *Session) Restart() {
	s.capSessions.dropAll()
	select {
	case s.restart <- struct{}{}:
	default: // one is pending already
	}
}

// RetryNow makes a session that waits for its next attempt (in a backoff,
// or in error until something changes) try again at once, with a fresh
// retry budget, as Restart does; a session that is connected or connecting
// is left alone. It is what a change that may let a waiting session
// connect asks for (another replica authorized its OAuth grant, say): a
// session that connected meanwhile must not lose its calls to a restart.
func (s *Session) RetryNow() {
	select {
	case s.retryNow <- struct{}{}:
	default: // one is pending already
	}
}

// Shutdown stops the session at once, also during a backoff wait: no
// further attempt is made. It closes the MCP session, kills a stdio server's
// whole process group, and returns when nothing of the session remains, or
// after DefaultShutdownTimeout, or when ctx ends, whichever comes first.
func (s *Session) Shutdown(ctx context.Context) error {
	s.runCancel()
	s.capSessions.closeAll()
	s.startOnce.Do(func() { close(s.started); close(s.done) }) // never started: nothing to stop
	timer := time.NewTimer(DefaultShutdownTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
		return fmt.Errorf("%s: shutdown did not finish within %s", s.cfg.Name, DefaultShutdownTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once the session has shut down completely.
func (s *Session) Done() <-chan struct{} { return s.done }

// Status returns the session's current status.
func (s *Session) Status() sb.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.status
}

// Info returns a snapshot of the session's runtime info.
func (s *Session) Info() sb.RuntimeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &s.m
	info := sb.RuntimeInfo{
		Status:          m.status,
		Attempt:         m.attempt,
		Reconnects:      m.reconnects,
		StartupTimedOut: m.startupTimedOut,
		Tools:           []sb.ToolInfo{},
	}
	if m.err != nil {
		e := *m.err
		info.Error = &e
	}
	if m.lastDrop != nil {
		d := *m.lastDrop
		info.LastDrop = &d
	}
	if !m.nextRetryAt.IsZero() {
		t := m.nextRetryAt
		info.NextRetryAt = &t
	}
	if l := s.link; l != nil && m.status == sb.StatusConnected {
		t := m.connectedSince
		info.ConnectedSince = &t
		info.Transport = l.transport
		if l.proc != nil {
			info.PID = l.proc.pid
		}
		if r := l.cs.InitializeResult(); r != nil {
			info.ProtocolVersion = r.ProtocolVersion
			if r.ServerInfo != nil {
				info.ServerInfo = &sb.ServerInfo{Name: r.ServerInfo.Name, Version: r.ServerInfo.Version}
			}
		}
	}
	info.Sandbox = s.sandboxView(s.link)
	info.Tools = append(info.Tools, s.catalog.infos...) // a copy: callers may keep it
	info.ToolCount = len(s.catalog.tools)
	info.ResourceCount = len(s.catalog.resources)
	info.PromptCount = len(s.catalog.prompts)
	return info
}

// Tools returns the server's tools as last listed; empty unless connected.
// The returned slice must not be modified. Each tool's InputSchema and
// OutputSchema are json.RawMessage values (the JSON the server sent,
// compacted), not the go-sdk's decoded maps.
func (s *Session) Tools() []*mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog.tools
}

// Catalog returns everything the server offers, as last listed; the tools'
// schemas are JSON, as in Tools.
func (s *Session) Catalog() (tools []*mcp.Tool, resources []*mcp.Resource, templates []*mcp.ResourceTemplate, prompts []*mcp.Prompt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.catalog
	return c.tools, c.resources, c.templates, c.prompts
}

// CacheHints returns the cache hints of the server's lists, as last
// listed (Catalog).
func (s *Session) CacheHints() ListHints {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog.hints
}

// Client returns the live MCP client session, waiting for a session that is
// connecting until ctx ends. A session in error fails at once with an
// *Error (wrapping ErrUnavailable) carrying the last cause and its phase.
//
// The returned session may drop at any time; calls on it then fail with an
// error wrapping mcp.ErrConnectionClosed. CallTool handles that and more.
func (s *Session) Client(ctx context.Context) (*mcp.ClientSession, error) {
	l, _, err := s.current(ctx, nil)
	if err != nil {
		return nil, err
	}
	return l.cs, nil
}

// current returns the live link, waiting while the session connects, with
// the lists it published (read together with it: the link's own field
// belongs to the lifecycle goroutine, and the session's may be another
// link's, or none, a moment later). If not is non-nil, a link equal to it
// does not count: the caller saw it fail and waits for its replacement.
func (s *Session) current(ctx context.Context, not *link) (*link, catalog, error) {
	for {
		s.mu.Lock()
		status, l, cat, e, ch := s.m.status, s.link, s.catalog, s.m.err, s.changed
		s.mu.Unlock()
		switch {
		case status == sb.StatusConnected && l != nil && l != not && l.alive():
			return l, cat, nil
		case status == sb.StatusError:
			return nil, catalog{}, s.asError(e)
		case status == sb.StatusConnected:
			// The link has died (or the server forgot it) and the lifecycle
			// goroutine has not yet said so: wait for the replacement rather
			// than send a call that cannot arrive.
		case status == sb.StatusDisabled:
			select {
			case <-s.done:
				return nil, catalog{}, ErrShutdown
			default:
			}
			return nil, catalog{}, &Error{Server: s.cfg.Name, Phase: sb.PhaseConfig, Code: sb.CodeDisabled, Message: "the server is disabled", err: ErrDisabled}
		}
		select {
		case <-ch:
		case <-s.done:
			return nil, catalog{}, ErrShutdown
		case <-ctx.Done():
			return nil, catalog{}, fmt.Errorf("%s: waiting for the session to connect: %w", s.cfg.Name, context.Cause(ctx))
		}
	}
}

// WaitFor waits until pred holds for the session's runtime info, or ctx
// ends. It is meant for tests and tools that watch a session.
func (s *Session) WaitFor(ctx context.Context, pred func(sb.RuntimeInfo) bool) (sb.RuntimeInfo, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		info := s.Info()
		if pred(info) {
			return info, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return info, ctx.Err()
		}
	}
}

// update applies a transition to the machine under the lock, reports the
// change as an event (outside the lock), then wakes waiters, so that a
// waiter that sees the new state can rely on the event having been seen too.
func (s *Session) update(reason sb.Reason, fn func(m *machine)) {
	s.mu.Lock()
	prev := s.m.status
	fn(&s.m)
	ev := sb.Event{
		Server:     s.cfg.Name,
		Reason:     reason,
		Status:     s.m.status,
		Previous:   prev,
		Attempt:    s.m.attempt,
		Reconnects: s.m.reconnects,
		At:         time.Now(),
	}
	if s.m.err != nil {
		e := *s.m.err
		ev.Error = &e
	}
	s.mu.Unlock()

	s.logEvent(ev)
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(ev)
	}

	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Session) logEvent(ev sb.Event) {
	attrs := []any{"reason", ev.Reason, "status", ev.Status, "attempt", ev.Attempt, "reconnects", ev.Reconnects}
	if ev.Error != nil {
		attrs = append(attrs, "phase", ev.Error.Phase, "code", ev.Error.Code, "error", ev.Error.Message)
	}
	switch {
	case ev.Reason == sb.ReasonAttemptFailed || ev.Reason == sb.ReasonDropped:
		s.log.Warn("upstream "+string(ev.Reason), attrs...)
	case ev.Status != ev.Previous || ev.Reason == sb.ReasonConnected:
		s.log.Info("upstream "+string(ev.Reason), attrs...)
	default:
		s.log.Debug("upstream "+string(ev.Reason), attrs...)
	}
}

// errRestart is the "cause" of a link closed by Restart.
var errRestart = errors.New("restart requested")
