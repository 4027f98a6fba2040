// Package registry keeps the configured servers and their live sessions:
// it loads every config from the store at startup, starts the enabled ones
// with bounded concurrency, applies runtime changes to one server without
// disturbing the others, and runs throwaway test sessions.
package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Defaults for Options fields whose zero value means "the default".
const (
	DefaultStartConcurrency = 16
	DefaultShutdownTimeout  = 10 * time.Second
)

// Options tune a Registry. The zero value is ready to use.
type Options struct {
	// Logger receives the registry's and the sessions' logs. Nil means
	// slog.Default().
	Logger *slog.Logger
	// StartConcurrency bounds how many sessions start at once at load. If
	// zero, DefaultStartConcurrency is used.
	StartConcurrency int
	// Session is the template for every session's options (health probe,
	// result cap, ...). Its Logger and OnEvent are set by the registry.
	Session upstream.Options
	// MaxClientSessions caps the per-client sessions of one server
	// (session_scope "per-client"); a call from one client more fails with
	// ErrTooManyClients. If zero, DefaultMaxClientSessions is used.
	MaxClientSessions int
	// ClientIdleTimeout: a per-client session that no call has used for
	// this long is shut down; the client's next call starts a new one. If
	// zero, DefaultClientIdleTimeout is used.
	ClientIdleTimeout time.Duration
	// ReplicaID names this replica among those sharing the store (see
	// ReplicaInfo). If empty, a random one is chosen.
	ReplicaID string
	// Followers are kept in step with the store by RunSync beside the
	// servers (the toolsets and the tokens, which Load does not read).
	Followers []Follower
	// PrivateDirs are directories that no server's derived mounts may
	// show, nor anything inside or above them (serve's state directory,
	// its database's), beside the user's home, config and state
	// directories, which never are (see sandbox.HostOf).
	PrivateDirs []string
}

// Registry is the set of configured servers. It is safe for concurrent use.
type Registry struct {
	store sb.Store
	opts  Options
	log   *slog.Logger
	subs  broadcaster[sb.Event]
	notes broadcaster[upstream.Notification]

	replica   replicaState // which replica this is, and when it last synced (sync.go)
	syncNewMu sync.Mutex   // see syncNew (sync.go)

	// mu guards servers. Operations on one server are serialised by that
	// server's own lock (entry.mu), so a slow change to one server never
	// holds up the others.
	mu      sync.RWMutex
	servers map[string]*entry
	closed  bool

	loaded chan struct{} // closed when every startup begun by Load has returned
	wg     sync.WaitGroup

	// The idle reaper of per-client sessions (clients.go): started with the
	// first one, stopped by Shutdown.
	reaperOnce sync.Once
	reapWake   chan struct{} // a call ended: a session may fall idle sooner
	reapCtx    context.Context
	stopReaper context.CancelFunc
}

// entry is one configured server.
type entry struct {
	mu      sync.Mutex // serialises changes to this server
	stored  sb.StoredServer
	session *upstream.Session         // nil while disabled
	first   *firstOutcome             // of session; nil while disabled
	clients map[string]*clientSession // per-client sessions by client (clients.go)
	gone    bool                      // deleted
}

// New returns a registry over store. Call Load to start the servers.
func New(store sb.Store, opts *Options) *Registry {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartConcurrency <= 0 {
		o.StartConcurrency = DefaultStartConcurrency
	}
	if o.MaxClientSessions <= 0 {
		o.MaxClientSessions = DefaultMaxClientSessions
	}
	if o.ClientIdleTimeout <= 0 {
		o.ClientIdleTimeout = DefaultClientIdleTimeout
	}
	// Every session of the registry dials under one policy, sharing its
	// connection pool, and speaks for one instance, unless told otherwise.
	if o.Session.Egress == nil {
		o.Session.Egress = egress.NewPolicy(nil)
	}
	if o.Session.Instance == nil {
		o.Session.Instance = egress.NewInstance()
	}
	r := &Registry{store: store, opts: o, log: o.Logger, servers: make(map[string]*entry), loaded: make(chan struct{}),
		reapWake: make(chan struct{}, 1)}
	r.reapCtx, r.stopReaper = context.WithCancel(context.Background())
	r.replica.id = o.ReplicaID
	if r.replica.id == "" {
		r.replica.id = randomID()
	}
	return r
}

// Load reads every config from the store and starts the enabled servers in
// the background, at most StartConcurrency at a time. It returns once the
// configs are read; Loaded is closed when every start has returned
// (connected, failed, or timed out: sessions keep trying on their own).
func (r *Registry) Load(ctx context.Context) error {
	all, err := r.store.List(ctx)
	if err != nil {
		close(r.loaded)
		return fmt.Errorf("loading servers: %w", err)
	}
	var toStart []*upstream.Session
	r.mu.Lock()
	for _, st := range all {
		e := &entry{stored: st}
		if st.Config.IsEnabled() {
			r.newSession(e, &st.Config)
			toStart = append(toStart, e.session)
		}
		r.servers[st.Config.Name] = e
	}
	r.mu.Unlock()
	r.synced(time.Now())
	r.log.Info("servers loaded", "count", len(all), "enabled", len(toStart))

	sem := make(chan struct{}, r.opts.StartConcurrency)
	var starting sync.WaitGroup
	for _, s := range toStart {
		starting.Add(1)
		r.wg.Go(func() {
			defer starting.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s.Start(context.Background()) // the outcome is in the session's runtime info
		})
	}
	r.wg.Go(func() {
		starting.Wait()
		close(r.loaded)
	})
	return nil
}

// Loaded is closed when every server started by Load has connected, failed
// or passed its startup timeout.
func (r *Registry) Loaded() <-chan struct{} { return r.loaded }

// newSession gives e a new, unstarted session for cfg.
func (r *Registry) newSession(e *entry, cfg *sb.ServerConfig) {
	first := newFirstOutcome(time.Now())
	o := r.opts.Session
	o.Logger = r.log
	o.OnEvent = func(ev sb.Event) {
		first.observe(ev)
		r.subs.publish(ev)
	}
	o.OnNotification = func(server string, p mcp.Params) { r.notes.publish(upstream.Notification{Server: server, Params: p}) }
	e.session, e.first = upstream.New(cfg, &o), first
}

// stopSession stops e's session, if any; e.mu is held.
func (r *Registry) stopSession(e *entry) {
	if e.session == nil {
		return
	}
	r.stop(e.session)
	// A session stopped before it ever ran reports nothing: its wait ends
	// here.
	e.first.settle()
	e.session, e.first = nil, nil
}

// startAsync starts a session without waiting for it to connect.
func (r *Registry) startAsync(s *upstream.Session) {
	r.wg.Go(func() { s.Start(context.Background()) })
}

// Subscribe returns every session event from now on, and a function that
// ends the subscription. A subscriber that falls more than 256 events
// behind misses events.
func (r *Registry) Subscribe() (<-chan sb.Event, func()) { return r.subs.subscribe() }

// SubscribeNotifications returns every server's log messages and resource
// updates from now on, and a function that ends the subscription.
func (r *Registry) SubscribeNotifications() (<-chan upstream.Notification, func()) {
	return r.notes.subscribe()
}

func (r *Registry) get(name string) (*entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ErrClosed
	}
	e, ok := r.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", sb.ErrNotFound, name)
	}
	return e, nil
}

// derive sets cfg's derived mounts (sandbox.Apply): every write computes
// them afresh from the command and arguments it stores, so that the
// stored config says what its sandbox will show, and a request cannot
// choose them.
func (r *Registry) derive(cfg *sb.ServerConfig) {
	sandbox.Apply(cfg, sandbox.HostOf(r.opts.PrivateDirs...))
}

// ErrClosed is returned after Shutdown.
var ErrClosed = sb.NewError(sb.CodeShuttingDown, "registry is shut down")

// view builds the API view of an entry; e.mu must be held or the entry
// otherwise stable.
func view(e *entry) sb.ServerView {
	v := sb.ServerView{
		ServerConfig: *e.stored.Config.Masked(),
		Version:      e.stored.Version,
		CreatedAt:    e.stored.CreatedAt,
		UpdatedAt:    e.stored.UpdatedAt,
	}
	if e.session != nil {
		v.Runtime = e.session.Info()
	} else {
		v.Runtime = sb.RuntimeInfo{Status: sb.StatusDisabled, Tools: []sb.ToolInfo{}}
	}
	return v
}

// List returns every server's view, ordered by name.
func (r *Registry) List() []sb.ServerView {
	r.mu.RLock()
	entries := make([]*entry, 0, len(r.servers))
	for _, name := range slices.Sorted(maps.Keys(r.servers)) {
		entries = append(entries, r.servers[name])
	}
	r.mu.RUnlock()
	out := make([]sb.ServerView, len(entries))
	for i, e := range entries {
		e.mu.Lock()
		out[i] = view(e)
		e.mu.Unlock()
	}
	return out
}

// Get returns one server's view, or an error wrapping sb.ErrNotFound.
func (r *Registry) Get(name string) (sb.ServerView, error) {
	e, err := r.get(name)
	if err != nil {
		return sb.ServerView{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return view(e), nil
}

// Create validates and stores a new server and, if enabled, starts it
// without waiting for it to connect.
func (r *Registry) Create(ctx context.Context, cfg *sb.ServerConfig) (sb.ServerView, error) {
	cfg, err := cfg.Unmask(nil)
	if err != nil {
		return sb.ServerView{}, err
	}
	r.derive(cfg)
	if err := cfg.Validate(); err != nil {
		return sb.ServerView{}, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return sb.ServerView{}, ErrClosed
	}
	if _, ok := r.servers[cfg.Name]; ok {
		r.mu.Unlock()
		return sb.ServerView{}, fmt.Errorf("%w: %q", sb.ErrExists, cfg.Name)
	}
	// Reserve the name while the store is written, so that two creates of
	// one name cannot both start a session.
	e := &entry{}
	e.mu.Lock()
	defer e.mu.Unlock()
	r.servers[cfg.Name] = e
	r.mu.Unlock()

	st, err := r.store.Create(ctx, cfg)
	if err != nil {
		r.mu.Lock()
		delete(r.servers, cfg.Name)
		r.mu.Unlock()
		return sb.ServerView{}, err
	}
	e.stored = st
	if cfg.IsEnabled() {
		r.newSession(e, &st.Config)
	}
	r.log.Info("server created", "server", cfg.Name, "enabled", cfg.IsEnabled())
	// Said before the session starts, so that a watcher hears of the
	// server before it hears of its first attempt.
	r.subs.publish(sb.Event{Server: cfg.Name, Reason: sb.ReasonCreated, Status: view(e).Runtime.Status, At: time.Now()})
	if cfg.IsEnabled() {
		r.startAsync(e.session)
	}
	return view(e), nil
}

// Update replaces a server's config. version, if not zero, must be the
// version the caller read (else an error wrapping sb.ErrConflict). Env and
// header values sent as "***" keep their stored values. Only a change of a
// connection-relevant field reconnects the server; call timeouts apply at
// once without one. Enabling starts the server, disabling stops it.
func (r *Registry) Update(ctx context.Context, name string, cfg *sb.ServerConfig, version int64) (sb.ServerView, error) {
	if cfg.Name == "" {
		cfg.Name = name
	}
	if cfg.Name != name {
		return sb.ServerView{}, &sb.ValidationError{Fields: []*sb.FieldError{{Field: "name",
			Message: fmt.Sprintf("cannot be changed (%q in the body, %q in the path); create a new server and delete the old one", cfg.Name, name)}}}
	}
	e, err := r.getFresh(ctx, name) // a server made through another replica a moment ago: sync.go
	if err != nil {
		return sb.ServerView{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.stored.Config
	cfg, err = cfg.Unmask(&prev)
	if err != nil {
		return sb.ServerView{}, err
	}
	r.derive(cfg)
	if err := cfg.Validate(); err != nil {
		return sb.ServerView{}, err
	}
	st, err := r.store.Update(ctx, cfg, version)
	if err != nil {
		return sb.ServerView{}, err
	}
	e.stored = st
	r.followMove(ctx, &prev, st) // oauth.go
	r.apply(e, &prev, &st.Config)
	r.subs.publish(sb.Event{Server: name, Reason: sb.ReasonUpdated, Status: view(e).Runtime.Status, At: time.Now()})
	return view(e), nil
}

// SetEnabled enables or disables a server.
func (r *Registry) SetEnabled(ctx context.Context, name string, enabled bool) (sb.ServerView, error) {
	e, err := r.getFresh(ctx, name) // a server made through another replica a moment ago: sync.go
	if err != nil {
		return sb.ServerView{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.stored.Config
	if prev.IsEnabled() == enabled {
		return view(e), nil
	}
	cfg := prev.Clone()
	cfg.Enabled = &enabled
	r.derive(cfg)
	st, err := r.store.Update(ctx, cfg, e.stored.Version)
	if err != nil {
		return sb.ServerView{}, err
	}
	e.stored = st
	r.apply(e, &prev, &st.Config)
	r.subs.publish(sb.Event{Server: name, Reason: sb.ReasonUpdated, Status: view(e).Runtime.Status, At: time.Now()})
	return view(e), nil
}

// apply brings e's session in line with a changed config; e.mu is held.
func (r *Registry) apply(e *entry, prev, next *sb.ServerConfig) {
	switch {
	case !next.IsEnabled():
		if e.session != nil {
			r.stopSession(e)
			r.stopClients(e)
			r.log.Info("server disabled", "server", next.Name)
		}
	case e.session == nil || connectionChanged(prev, next):
		// Per-client sessions are not replaced here: each client's next
		// call starts one with the new config.
		r.stopSession(e)
		r.stopClients(e)
		r.newSession(e, next)
		r.startAsync(e.session)
		r.log.Info("server (re)started for a changed config", "server", next.Name)
	default:
		e.session.SetCallDefaults(next.CallTimeout(), next.MaxTotalTimeout())
		for _, c := range e.clients {
			c.s.SetCallDefaults(next.CallTimeout(), next.MaxTotalTimeout())
		}
		if next.SessionScope != sb.SessionPerClient {
			r.stopClients(e) // back to one shared session
		}
	}
}

// connectionChanged reports whether two configs differ in anything that
// needs a new connection. Everything but the call timeouts, the enabled
// flag and the session scope does (the scope decides which session a
// call takes, not how one connects).
func connectionChanged(a, b *sb.ServerConfig) bool {
	x, y := *a.Clone(), *b.Clone()
	for _, c := range []*sb.ServerConfig{&x, &y} {
		c.Enabled, c.CallTimeoutMS, c.MaxTotalTimeoutMS, c.SessionScope = nil, 0, 0, ""
		if len(c.Args) == 0 {
			c.Args = nil
		}
		if len(c.Env) == 0 {
			c.Env = nil
		}
		if len(c.Headers) == 0 {
			c.Headers = nil
		}
	}
	return !reflect.DeepEqual(x, y)
}

func (r *Registry) stop(s *upstream.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), upstream.DefaultShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		r.log.Warn("stopping session", "server", s.Name(), "error", err)
	}
}

// Delete removes a server and stops its session. version, if not zero,
// must match the stored version.
func (r *Registry) Delete(ctx context.Context, name string, version int64) error {
	e, err := r.getFresh(ctx, name) // a server made through another replica a moment ago: sync.go
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := r.store.Delete(ctx, name, version); err != nil {
		return err
	}
	r.removed(e, name, "server deleted")
	return nil
}

// removed forgets the entry e of a server deleted from the store, stops
// everything it ran, removes its sandbox workspace and says so. e.mu is
// held.
func (r *Registry) removed(e *entry, name, msg string) {
	e.gone = true
	r.stopSession(e)
	r.stopClients(e)
	r.removeWorkspace(&e.stored.Config)
	// The name is freed last: a server created again under it must
	// neither find the old one's workspace nor lose its own to this
	// removal.
	r.mu.Lock()
	delete(r.servers, name)
	r.mu.Unlock()
	r.log.Info(msg, "server", name)
	r.subs.publish(sb.Event{Server: name, Reason: sb.ReasonDeleted, Status: sb.StatusDisabled, At: time.Now()})
}

// removeWorkspace removes the sandbox workspace of cfg's server, whose
// processes are all gone (see sandbox.Runtime.RemoveWorkspace). Without
// the default profile (an embedder's registry, most tests) a server whose
// config has no sandbox never had one here, and its name's directory is
// left alone: it is not this registry's to touch.
func (r *Registry) removeWorkspace(cfg *sb.ServerConfig) {
	if cfg.Sandbox == nil && !r.opts.Session.SandboxDefault {
		return
	}
	rt := r.opts.Session.Sandbox
	if rt == nil {
		rt = sandbox.System
	}
	if err := rt.RemoveWorkspace(cfg.Name); err != nil {
		r.log.Warn("removing the deleted server's sandbox workspace", "server", cfg.Name, "error", err)
	}
}

// Restart reconnects a server with a fresh retry budget, and its per-client
// sessions too.
func (r *Registry) Restart(name string) error {
	return r.eachSession(name, (*upstream.Session).Restart)
}

// RetryNow makes the server name try to connect again at once if it is
// waiting to (in a backoff, or in error), and leaves it alone if it is
// connected or connecting (upstream.Session.RetryNow); its per-client
// sessions likewise.
func (r *Registry) RetryNow(name string) error {
	return r.eachSession(name, (*upstream.Session).RetryNow)
}

// eachSession runs fn on the server's session and its per-client sessions.
func (r *Registry) eachSession(name string, fn func(*upstream.Session)) error {
	e, err := r.get(name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == nil {
		return fmt.Errorf("%w: %q is disabled; enable it to start it", ErrDisabled, name)
	}
	fn(e.session)
	for _, c := range e.clients {
		fn(c.s)
	}
	return nil
}

// ErrDisabled is returned for an operation that needs a running server.
var ErrDisabled = sb.NewError(sb.CodeDisabled, "server is disabled")

// Logs returns a server's kept stderr lines, oldest first.
func (r *Registry) Logs(name string) ([]string, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == nil {
		return []string{}, nil
	}
	return e.session.Logs(), nil
}

// TestResult is what a test session found: the session's runtime info
// (with the tool list, or the classified error) and the server's stderr
// lines. The HTTP API shows it as api.TestResult.
type TestResult struct {
	Runtime sb.RuntimeInfo
	Logs    []string
}

// Test runs a throwaway session for a stored server (name) and reports what
// it found (see TestSession). It never touches the live session of that
// server: the test session is a separate process or connection under a
// random id.
func (r *Registry) Test(ctx context.Context, name string) (TestResult, error) {
	e, err := r.get(name)
	if err != nil {
		return TestResult{}, err
	}
	e.mu.Lock()
	cfg := e.stored.Config.Clone()
	e.mu.Unlock()
	return r.TestConfig(ctx, cfg)
}

// TestConfig is Test for a draft config that is not stored. Masked secrets
// ("***") are taken from the stored server of the same name, if any.
func (r *Registry) TestConfig(ctx context.Context, cfg *sb.ServerConfig) (TestResult, error) {
	var prev *sb.ServerConfig
	if e, err := r.get(cfg.Name); err == nil {
		e.mu.Lock()
		prev = e.stored.Config.Clone()
		e.mu.Unlock()
	}
	cfg, err := cfg.Unmask(prev)
	if err != nil {
		return TestResult{}, err
	}
	r.derive(cfg)
	o := r.opts.Session
	o.Logger = r.log.With("test_session", randomID())
	return TestSession(ctx, cfg, &o)
}

// TestSession runs a throwaway session for cfg with the session options
// o (whose OnEvent and OnNotification are ignored) and reports what it
// found: the runtime info with the tool list, or the classified error,
// and the server's stderr lines. The session makes one attempt, enabled
// or not, and is shut down, with every process it started, before
// TestSession returns. An invalid cfg is an error; a server that fails is
// a result. A sandboxed server's test session runs in a fresh isolated
// workspace of the server's sandbox profile, never in the shared one.
func TestSession(ctx context.Context, cfg *sb.ServerConfig, o *upstream.Options) (TestResult, error) {
	if err := cfg.Validate(); err != nil {
		return TestResult{}, err
	}
	cfg = cfg.Clone()
	cfg.Enabled = nil
	cfg.Retry = &sb.RetryConfig{MaxAttempts: 1}
	if cfg.IsStdio() {
		// The server's own sandbox profile, in a fresh isolated workspace
		// removed with the test's process: a test never writes to the
		// workspace a live server shares (a broken draft could spoil its
		// package cache), and leaves nothing behind.
		cfg.Sandbox = sandbox.ForTest(cfg.Sandbox, o.SandboxDefault)
	}
	so := *o
	so.OnEvent, so.OnNotification = nil, nil
	if so.Logger == nil {
		so.Logger = slog.Default()
	}
	s := upstream.New(cfg, &so)
	startErr := s.Start(ctx) // the outcome is in the session's runtime info
	info := s.Info()
	if !settled(info) && errors.Is(startErr, upstream.ErrStartupTimeout) {
		// Start waits as long as the attempt may take, from a moment
		// before the attempt began: the attempt's own outcome (a
		// handshake that timed out is phase initialize, code timeout, as
		// the live session says) is due a moment later.
		wctx, cancel := context.WithTimeout(ctx, testOutcomeGrace)
		info, _ = s.WaitFor(wctx, settled)
		cancel()
	}
	if !settled(info) {
		var ue *upstream.Error
		if errors.As(startErr, &ue) {
			info.Status = sb.StatusError
			info.Error = &sb.ErrorInfo{Phase: ue.Phase, Code: ue.Code, Message: ue.Message}
		}
	}
	logs := s.Logs()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstream.DefaultShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		so.Logger.Warn("stopping test session", "server", cfg.Name, "error", err)
	}
	// Report the state the test reached, not the "disabled" of a session
	// that has been shut down.
	return TestResult{Runtime: info, Logs: logs}, nil
}

// testOutcomeGrace bounds how long a test session waits, once its startup
// timeout has passed, for the attempt to report its own outcome.
const testOutcomeGrace = 10 * time.Second

// settled reports whether a session's first attempt has had an outcome.
func settled(i sb.RuntimeInfo) bool {
	return i.Status == sb.StatusConnected || i.Status == sb.StatusError
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Session returns the shared session of a server, for the executor's MCP
// plugin and the gateway: ok is false for an unknown server, and the
// session is nil for a disabled one. It serves every call of a server whose
// session_scope is "shared"; for a "per-client" server it serves the lists,
// resources, prompts and health, and the calls made without a client (see
// ClientSession).
func (r *Registry) Session(name string) (s *upstream.Session, ok bool) {
	e, err := r.get(name)
	if err != nil {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session, true
}

// WaitSettled waits until the first connection attempt of every enabled
// server in names (of every enabled server, if names is empty) has had an
// outcome: the server connected, or the attempt failed (also when the
// session goes on retrying), or the session stopped. It waits for no
// server beyond limit after that server's session was created (at Load,
// Create, or a change of config that reconnects it): a server that hangs
// in its first attempt holds nobody longer than that, and one created
// longer than limit ago is not waited for at all.
//
// It returns nil then, or the cause of ctx's end if that comes first.
// Unknown and disabled servers count as settled. A session replaced during
// the wait (its config changed) is waited for in its new session, and a
// wait for every server also waits for the servers created meanwhile.
//
// It lets a client's first look at the servers (tools/list just after
// startup) find the servers that are about to connect rather than none.
func (r *Registry) WaitSettled(ctx context.Context, limit time.Duration, names ...string) error {
	for {
		pending := r.unsettled(limit, names)
		if len(pending) == 0 {
			return nil
		}
		for _, f := range pending {
			if err := f.wait(ctx, limit); err != nil {
				return err
			}
		}
	}
}

// unsettled returns the first outcomes, among the enabled servers in names
// (every server if empty), that are still awaited within limit.
func (r *Registry) unsettled(limit time.Duration, names []string) []*firstOutcome {
	r.mu.RLock()
	var entries []*entry
	if len(names) == 0 {
		entries = slices.Collect(maps.Values(r.servers))
	}
	for _, name := range names {
		if e, ok := r.servers[name]; ok {
			entries = append(entries, e)
		}
	}
	r.mu.RUnlock()
	// Each entry is locked after r.mu is released: the lock order is entry,
	// then registry (see Shutdown).
	now := time.Now()
	var pending []*firstOutcome
	for _, e := range entries {
		e.mu.Lock()
		f := e.first
		e.mu.Unlock()
		if f != nil && f.awaited(now, limit) {
			pending = append(pending, f)
		}
	}
	return pending
}

// MaxTotalTimeout returns the max_total_timeout_ms of a server's config:
// zero if it sets none or there is no such server.
func (r *Registry) MaxTotalTimeout(name string) time.Duration {
	e, err := r.get(name)
	if err != nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stored.Config.MaxTotalTimeout()
}

// Names returns the names of every configured server, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.servers))
}

// Shutdown stops every session, the per-client ones too, concurrently,
// within DefaultShutdownTimeout or ctx, whichever ends first. The registry
// cannot be used afterwards.
func (r *Registry) Shutdown(ctx context.Context) error {
	// Lock order is entry, then registry (Create and Delete take r.mu while
	// holding e.mu), so the entries are snapshotted under r.mu and locked
	// after it is released.
	r.mu.Lock()
	r.closed = true
	entries := slices.Collect(maps.Values(r.servers))
	r.mu.Unlock()
	var sessions []*upstream.Session
	for _, e := range entries {
		e.mu.Lock()
		if e.session != nil {
			sessions = append(sessions, e.session)
			e.first.settle() // nothing is awaited from a registry shutting down
		}
		sessions = append(sessions, takeClients(e)...)
		e.mu.Unlock()
	}
	r.stopReaper() // the idle reaper

	ctx, cancel := context.WithTimeout(ctx, DefaultShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.Shutdown(ctx) })
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("registry: background starts did not finish: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}
