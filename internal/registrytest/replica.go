package registrytest

import (
	"context"
	"log/slog"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Replica is one serve process on a database it shares with other
// replicas (a PostgreSQL database of pgtest): its own store connection and
// registry, loaded and following the others' writes (RunSync).
type Replica struct {
	Store    sb.Store
	Registry *registry.Registry
	OAuth    *oauthclient.Client // the sessions' OAuth client; nil unless StartOAuthReplica
}

// StartReplica opens dsn and starts a replica on it: a registry with the
// options that opts returns for the replica's store (opts may be nil; a
// nil Logger discards), loaded and running RunSync. opts builds what
// needs the store, such as followers; it may fail the test. When the test
// ends (after the cleanups registered later, such as an HTTP server's),
// RunSync stops, the followers that have a Close method are closed (their
// writes end before the store closes, as in serve), the registry shuts
// down and the store closes.
func StartReplica(tb testing.TB, dsn string, opts func(sb.Store) *registry.Options) *Replica {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() }) // registered first, so run last; and run if opts or Load fails the test
	o := &registry.Options{}
	if opts != nil {
		o = opts(st)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	reg := registry.New(st, o)
	if err := reg.Load(ctx); err != nil {
		tb.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); reg.RunSync(sctx, 0) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		for _, f := range o.Followers {
			if c, ok := f.(interface{ Close() }); ok {
				c.Close()
			}
		}
		reg.Shutdown(ctx)
	})
	return &Replica{Store: st, Registry: reg}
}

// StartOAuthReplica starts a replica (StartReplica) whose sessions have an
// OAuth client over the shared store, sealing with key: replicas share the
// key file.
func StartOAuthReplica(tb testing.TB, dsn string, key *sb.OAuthKey) *Replica {
	tb.Helper()
	var o *oauthclient.Client
	r := StartReplica(tb, dsn, func(st sb.Store) *registry.Options {
		o = &oauthclient.Client{Store: st.(sb.OAuthStore), Key: key}
		return &registry.Options{Session: upstream.Options{OAuth: o}}
	})
	r.OAuth = o
	return r
}
