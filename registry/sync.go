package registry

// Several replicas (serve processes) may share one store. Each runs its own
// sessions; what they share is the stored configs. A replica learns of the
// others' writes from the store's change feed (sb.ChangeFeed: PostgreSQL's
// LISTEN/NOTIFY), and compares everything with the store every
// resync interval as a safety net for a notification that was lost.
//
// Applying a change touches only the server that changed, and only if the
// stored version (and creation time: a server deleted and created again
// starts over at version 1) differs from the one running. A replica's own
// writes come back to it as notifications too; they find the version
// already running and are left alone, so nothing is applied twice.
//
// Ordering: remote changes are applied by one goroutine (RunSync), one at a
// time. A server's store read and its application happen under that
// server's lock, which local writes also hold while they write the store,
// so the read is never older than what the server already runs.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// DefaultResyncInterval is serve's default interval between full
// comparisons with the store.
const DefaultResyncInterval = 30 * time.Second

// Retry delays of a full resync that failed (the store unreachable): sooner
// than the next interval, since a failed resync may hide missed changes.
const (
	resyncRetryMin = time.Second
	resyncRetryMax = 30 * time.Second
)

// changeBuffer bounds the changes waiting to be applied; past it, they are
// dropped and a full resync replaces them.
const changeBuffer = 1024

// ReplicaInfo says which replica this registry is and how fresh its view of
// the store is.
type ReplicaInfo struct {
	// ID names this replica: Options.ReplicaID, or random at start.
	ID string `json:"id"`
	// LastSync is when the servers were last known to match the store: the
	// end of the latest full resync, or the latest change applied from the
	// change feed. Zero before the first.
	LastSync time.Time `json:"last_sync"`
	// ChangeFeed: the store reports other replicas' writes as they commit
	// (PostgreSQL). Without one, they arrive with the periodic resync only.
	ChangeFeed bool `json:"change_feed"`
}

// replicaState is the registry's part of ReplicaInfo.
type replicaState struct {
	id       string
	lastSync atomic.Int64 // unix nanoseconds
}

// ReplicaInfo returns this replica's id and when it last synchronised with
// the store.
func (r *Registry) ReplicaInfo() ReplicaInfo {
	info := ReplicaInfo{ID: r.replica.id}
	if ns := r.replica.lastSync.Load(); ns != 0 {
		info.LastSync = time.Unix(0, ns).UTC()
	}
	_, info.ChangeFeed = r.store.(sb.ChangeFeed)
	return info
}

func (r *Registry) synced(now time.Time) { r.replica.lastSync.Store(now.UnixNano()) }

// RunSync keeps the registry in line with changes that other processes make
// to the store, until ctx ends (it then returns ctx's error). It applies
// every change the store's feed reports, if the store has one
// (sb.ChangeFeed), and compares everything with the store interval after
// the last comparison that succeeded (never if interval is zero or
// negative), whenever the feed (re)connects or falls behind, and again
// after 1, 2, 4 … s if one failed (syncplan.go). Call it once, after Load,
// and end it before Shutdown.
func (r *Registry) RunSync(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	changes := make(chan sb.Change, changeBuffer)
	var behind atomic.Bool // a change was dropped: resync
	if feed, ok := r.store.(sb.ChangeFeed); ok {
		if l, ok := feed.(interface{ SetLogger(*slog.Logger) }); ok {
			l.SetLogger(r.log)
		}
		wg.Go(func() {
			_ = feed.Watch(ctx, func(c sb.Change) {
				select {
				case changes <- c:
				default:
					if !behind.Swap(true) {
						r.log.Warn("changes arrive faster than they are applied; resynchronising")
					}
				}
			})
		})
	}
	plan := resyncPlan{interval: interval}
	plan.start(time.Now())
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// One timer, re-armed for whatever the plan says is due next.
		timer.Stop()
		var due <-chan time.Time
		if d, ok := plan.wait(time.Now()); ok {
			timer.Reset(d)
			due = timer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-due:
			r.resync(ctx, &plan)
		case c := <-changes:
			switch c.Kind {
			case sb.ChangeResync:
				plan.requested(time.Now())
			case sb.ChangeServer:
				if err := r.syncServer(ctx, c.Name, c.Version); err != nil {
					if ctx.Err() != nil || errors.Is(err, ErrClosed) {
						return ctx.Err()
					}
					r.log.Warn("applying a change from the store failed; resynchronising", "server", c.Name, "error", err)
					plan.requested(time.Now())
				} else {
					r.synced(time.Now())
				}
			default:
				// A toolset or a token, for the followers; or a kind this
				// version does not keep (a newer replica's), which they
				// ignore.
				if err := r.follow(ctx, c); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					r.log.Warn("applying a change from the store failed; resynchronising", "kind", c.Kind, "name", c.Name, "error", err)
					plan.requested(time.Now())
				}
			}
		}
		if behind.Swap(false) {
			for len(changes) > 0 {
				<-changes // the resync covers them
			}
			plan.requested(time.Now())
		}
	}
}

// resync runs a full resync and tells plan how it went.
func (r *Registry) resync(ctx context.Context, plan *resyncPlan) {
	err := r.Resync(ctx)
	switch {
	case err == nil:
		plan.succeeded(time.Now())
	case ctx.Err() != nil || errors.Is(err, ErrClosed):
	default:
		wait := plan.failed(time.Now())
		r.log.Warn("resynchronising with the store failed; retrying", "error", err, "retry_in", wait)
	}
}

// Resync compares every server with the store and applies the differences:
// servers created, changed or deleted by other processes. Servers whose
// stored version is the one running are left alone.
func (r *Registry) Resync(ctx context.Context) error {
	start := time.Now()
	all, err := r.store.List(ctx)
	if err != nil {
		return err
	}
	stored := make(map[string]bool, len(all))
	var errs []error
	for _, st := range all {
		stored[st.Config.Name] = true
		if r.runs(st) {
			continue
		}
		if err := r.syncServer(ctx, st.Config.Name, -1); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range r.Names() {
		if !stored[name] {
			if err := r.syncServer(ctx, name, -1); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := r.follow(ctx, sb.Change{Kind: sb.ChangeResync}); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.synced(start)
	return nil
}

// follow hands c to every follower (Options.Followers).
func (r *Registry) follow(ctx context.Context, c sb.Change) error {
	var errs []error
	for _, f := range r.opts.Followers {
		errs = append(errs, f.Apply(ctx, c))
	}
	errs = append(errs, r.followOAuth(ctx, c)) // oauth.go
	return errors.Join(errs...)
}

// runs reports whether the registry runs st's version of its server.
func (r *Registry) runs(st sb.StoredServer) bool {
	e, err := r.get(st.Config.Name)
	if err != nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.gone && sameStored(e.stored, st)
}

// getFresh is get for a write: a server that another replica created, and
// whose notice has not arrived yet, is read from the store first, so that a
// client that created it through one replica may change it through another
// at once.
func (r *Registry) getFresh(ctx context.Context, name string) (*entry, error) {
	e, err := r.get(name)
	if !errors.Is(err, sb.ErrNotFound) {
		return e, err
	}
	if serr := r.syncServer(ctx, name, -1); serr != nil {
		return nil, serr
	}
	return r.get(name)
}

func sameStored(a, b sb.StoredServer) bool {
	return a.Version == b.Version && a.CreatedAt.Equal(b.CreatedAt)
}

// syncServer brings one server in line with the store. version is what a
// notification said (0: deleted), or -1 if unknown (a resync): a
// notification whose version is the one running (this replica's own write,
// coming back) costs no store read.
func (r *Registry) syncServer(ctx context.Context, name string, version int64) error {
	// Bounded: an entry is swapped under us only by a concurrent local
	// create or delete of the same name, which does not recur for ever.
	for range 8 {
		r.mu.RLock()
		closed := r.closed
		e, ok := r.servers[name]
		r.mu.RUnlock()
		switch {
		case closed:
			return ErrClosed
		case !ok:
			r.syncNewMu.Lock()
			done, err := r.syncNew(ctx, name, version)
			r.syncNewMu.Unlock()
			if done || err != nil {
				return err
			}
			continue // created meanwhile: compare with that
		}
		done, err := r.syncEntry(ctx, e, name, version)
		if done || err != nil {
			return err
		}
	}
	return errors.New("registry: the server kept changing locally while it was synchronised")
}

// syncNew adds a server that another process created. done is false if the
// name is taken (meanwhile). r.syncNewMu is held: every server added this
// way is read and added under it, and a deletion notice for a name that is
// not here is dropped under it, so a read made before a deletion cannot
// add the server after the notice was dropped.
func (r *Registry) syncNew(ctx context.Context, name string, version int64) (done bool, err error) {
	r.mu.RLock()
	_, taken := r.servers[name]
	r.mu.RUnlock()
	if taken {
		return false, nil
	}
	if version == 0 {
		return true, nil // deleted, and not here
	}
	st, err := r.store.Get(ctx, name)
	if errors.Is(err, sb.ErrNotFound) {
		return true, nil // created and deleted again
	}
	if err != nil {
		return true, err
	}
	e := &entry{stored: st}
	e.mu.Lock()
	defer e.mu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return true, ErrClosed
	}
	if _, taken := r.servers[name]; taken {
		r.mu.Unlock()
		return false, nil
	}
	r.servers[name] = e
	r.mu.Unlock()
	if st.Config.IsEnabled() {
		r.newSession(e, &st.Config)
		r.startAsync(e.session)
	}
	r.log.Info("server created by another replica", "server", name, "version", st.Version, "enabled", st.Config.IsEnabled())
	r.subs.publish(sb.Event{Server: name, Reason: sb.ReasonCreated, Status: view(e).Runtime.Status, At: time.Now()})
	return true, nil
}

// syncEntry brings an existing server in line with the store. done is
// false if e left the registry before its lock was taken.
func (r *Registry) syncEntry(ctx context.Context, e *entry, name string, version int64) (done bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.mu.RLock()
	current := r.servers[name] == e
	r.mu.RUnlock()
	if e.gone || !current {
		return false, nil
	}
	if version > 0 && e.stored.Version == version {
		return true, nil
	}
	st, err := r.store.Get(ctx, name)
	if errors.Is(err, sb.ErrNotFound) {
		r.removed(e, name, "server deleted by another replica")
		return true, nil
	}
	if err != nil {
		return true, err
	}
	if sameStored(e.stored, st) {
		return true, nil
	}
	prev := e.stored.Config
	if !e.stored.CreatedAt.Equal(st.CreatedAt) {
		// Deleted and created again elsewhere: another server under the
		// same name, which must not inherit the old one's workspace.
		r.stopSession(e)
		r.stopClients(e)
		r.removeWorkspace(&prev)
	}
	e.stored = st
	r.followMove(ctx, &prev, st) // oauth.go
	r.apply(e, &prev, &st.Config)
	r.log.Info("server changed by another replica", "server", name, "version", st.Version)
	r.subs.publish(sb.Event{Server: name, Reason: sb.ReasonUpdated, Status: view(e).Runtime.Status, At: time.Now()})
	return true, nil
}
