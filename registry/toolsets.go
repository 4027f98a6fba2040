package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	sb "github.com/switchboard-mcp/switchboard"
)

// A Follower keeps something beside the servers in step with the store
// (the toolsets, the tokens): RunSync hands it every change of the change
// feed that is not a server's, and a ChangeResync with every full resync.
type Follower interface {
	// Apply brings what c names in line with the store; c.Kind
	// sb.ChangeResync means everything. A kind it does not keep is
	// ignored.
	Apply(ctx context.Context, c sb.Change) error
}

// Toolsets is the set of stored toolsets, kept in memory so that the
// gateway reads one without a store query, and in step with the other
// replicas through RunSync (it is a Follower). It is safe for concurrent
// use.
type Toolsets struct {
	store sb.ToolsetStore
	log   *slog.Logger
	subs  broadcaster[string]

	mu   sync.RWMutex
	sets map[string]sb.StoredToolset
}

// NewToolsets returns the toolsets of store, which must implement
// sb.ToolsetStore (the sqlite and postgres stores do). Call Load.
func NewToolsets(store sb.Store, log *slog.Logger) (*Toolsets, error) {
	ts, ok := store.(sb.ToolsetStore)
	if !ok {
		return nil, fmt.Errorf("registry: the store %T keeps no toolsets", store)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Toolsets{store: ts, log: log, sets: map[string]sb.StoredToolset{}}, nil
}

// Load reads every toolset from the store.
func (t *Toolsets) Load(ctx context.Context) error {
	return t.Apply(ctx, sb.Change{Kind: sb.ChangeResync})
}

// Subscribe returns a channel that receives the name of every toolset that
// changes (created, updated, deleted, here or by another replica), and a
// function that ends the subscription. A subscriber that falls behind
// misses names; the gateway's periodic resync covers that.
func (t *Toolsets) Subscribe() (<-chan string, func()) { return t.subs.subscribe() }

// List returns every toolset, ordered by name.
func (t *Toolsets) List() []sb.StoredToolset {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]sb.StoredToolset, 0, len(t.sets))
	for _, s := range t.sets {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b sb.StoredToolset) int { return strings.Compare(a.Toolset.Name, b.Toolset.Name) })
	return out
}

// Get returns one toolset, or an error matching sb.ErrToolsetNotFound.
func (t *Toolsets) Get(name string) (sb.StoredToolset, error) {
	t.mu.RLock()
	s, ok := t.sets[name]
	t.mu.RUnlock()
	if !ok {
		return sb.StoredToolset{}, fmt.Errorf("toolset %q: %w", name, sb.ErrToolsetNotFound)
	}
	return s, nil
}

// Toolset returns the toolset named name as the gateway serves it, and its
// version. The value is shared: the caller must not change it.
func (t *Toolsets) Toolset(name string) (*sb.Toolset, int64, bool) {
	s, err := t.Get(name)
	if err != nil {
		return nil, 0, false
	}
	return &s.Toolset, s.Version, true
}

// Create validates and stores a new toolset.
func (t *Toolsets) Create(ctx context.Context, ts *sb.Toolset) (sb.StoredToolset, error) {
	if err := ts.Validate(); err != nil {
		return sb.StoredToolset{}, err
	}
	st, err := t.store.CreateToolset(ctx, ts)
	if err != nil {
		return sb.StoredToolset{}, err
	}
	t.set(st)
	return st, nil
}

// Update validates and replaces the toolset name (ts.Name must be name or
// empty); version as in sb.ToolsetStore.
func (t *Toolsets) Update(ctx context.Context, name string, ts *sb.Toolset, version int64) (sb.StoredToolset, error) {
	if ts.Name == "" {
		ts.Name = name
	}
	if ts.Name != name {
		return sb.StoredToolset{}, &sb.ValidationError{Fields: []*sb.FieldError{{Field: "name",
			Message: fmt.Sprintf("%q does not match the toolset %q; a toolset cannot be renamed (create a new one)", ts.Name, name)}}}
	}
	if err := ts.Validate(); err != nil {
		return sb.StoredToolset{}, err
	}
	st, err := t.store.UpdateToolset(ctx, ts, version)
	if err != nil {
		return sb.StoredToolset{}, err
	}
	t.set(st)
	return st, nil
}

// Delete removes the toolset name; version as in sb.ToolsetStore. Its
// clients' next requests are answered 404.
func (t *Toolsets) Delete(ctx context.Context, name string, version int64) error {
	if err := t.store.DeleteToolset(ctx, name, version); err != nil {
		return err
	}
	t.remove(name)
	return nil
}

// Apply implements Follower for sb.ChangeToolset and sb.ChangeResync.
func (t *Toolsets) Apply(ctx context.Context, c sb.Change) error {
	switch c.Kind {
	case sb.ChangeResync:
		all, err := t.store.ListToolsets(ctx)
		if err != nil {
			return fmt.Errorf("loading toolsets: %w", err)
		}
		stored := make(map[string]bool, len(all))
		for _, st := range all {
			stored[st.Toolset.Name] = true
			t.set(st)
		}
		for _, s := range t.List() {
			if !stored[s.Toolset.Name] {
				t.remove(s.Toolset.Name)
			}
		}
	case sb.ChangeToolset:
		st, err := t.store.GetToolset(ctx, c.Name)
		switch {
		case errors.Is(err, sb.ErrToolsetNotFound):
			t.remove(c.Name)
		case err != nil:
			return err
		default:
			t.set(st)
		}
	}
	return nil
}

// set keeps st unless what is kept is the same version or newer, and
// tells the subscribers if it changed.
func (t *Toolsets) set(st sb.StoredToolset) {
	t.mu.Lock()
	old, ok := t.sets[st.Toolset.Name]
	if ok && old.CreatedAt.Equal(st.CreatedAt) && old.Version >= st.Version {
		t.mu.Unlock()
		return
	}
	t.sets[st.Toolset.Name] = st
	t.mu.Unlock()
	t.subs.publish(st.Toolset.Name)
}

func (t *Toolsets) remove(name string) {
	t.mu.Lock()
	_, ok := t.sets[name]
	delete(t.sets, name)
	t.mu.Unlock()
	if ok {
		t.subs.publish(name)
	}
}
