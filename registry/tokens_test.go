package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// replica is one serve process's view of a shared store: the toolsets and
// tokens following its registry (registrytest.StartReplica).
type replica struct {
	toolsets *registry.Toolsets
	tokens   *registry.Tokens
}

func startReplica(t testing.TB, dsn string) replica {
	t.Helper()
	var r replica
	registrytest.StartReplica(t, dsn, func(st sb.Store) *registry.Options {
		log := slog.New(slog.DiscardHandler)
		var err error
		if r.toolsets, err = registry.NewToolsets(st, log); err != nil {
			t.Fatal(err)
		}
		if r.tokens, err = registry.NewTokens(st, log); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := r.toolsets.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.tokens.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return &registry.Options{Logger: log, Followers: []registry.Follower{r.toolsets, r.tokens}}
	})
	return r
}

// eventually polls cond every 10 ms for up to 10 s (the change feed
// delivers within milliseconds; the bound only stops a broken test).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within 10s", what)
}

// A token revoked through one replica stops working on the other as soon
// as the change feed says so, and the requests it authenticated there
// (bound to its context) end; a toolset written through one is served by
// the other.
func TestTokensAndToolsetsReachOtherReplicas(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a, b := startReplica(t, dsn), startReplica(t, dsn)
	ctx := context.Background()

	secret, tok, err := a.tokens.Create(ctx, "ci", []sb.Scope{sb.ToolsetScope("coder")})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name != "ci" || len(secret) < 40 {
		t.Fatalf("created %+v, secret %q", tok, secret)
	}
	if p, ok := a.tokens.Authenticate(secret); !ok || p.Name != "ci" || !p.Allows(sb.Endpoint{Toolset: "coder"}) {
		t.Fatalf("on the creating replica: %+v %v", p, ok)
	}
	var bound context.Context
	eventually(t, "the token works on the other replica", func() bool {
		p, _ := b.tokens.Authenticate(secret)
		bound = p.Revoked
		return bound != nil
	})
	if _, ok := b.tokens.Authenticate(secret + "x"); ok {
		t.Fatal("a wrong secret authenticates")
	}

	if err := a.tokens.Revoke(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.tokens.Authenticate(secret); ok {
		t.Fatal("a revoked token still works on the replica that revoked it")
	}
	select {
	case <-bound.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica did not end the revoked token's requests")
	}
	if _, ok := b.tokens.Authenticate(secret); ok {
		t.Fatal("a revoked token still works on the other replica")
	}
	if err := b.tokens.Revoke(ctx, "ci"); !errors.Is(err, sb.ErrTokenNotFound) {
		t.Errorf("revoking twice: %v", err)
	}

	if _, err := a.toolsets.Create(ctx, &sb.Toolset{Name: "coder", Tools: []sb.Selector{{Server: "fs", Tool: "read_file"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the toolset reaches the other replica", func() bool {
		ts, _, ok := b.toolsets.Toolset("coder")
		return ok && ts.Allows(sb.KindTool, "fs", "read_file")
	})
	if err := b.toolsets.Delete(ctx, "coder", 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion reaches the first replica", func() bool {
		_, _, ok := a.toolsets.Toolset("coder")
		return !ok
	})
}

// The last-used time is written on first use and then at most once a
// minute, and shows in the listing.
func TestTokenLastUsed(t *testing.T) {
	dsn := "sqlite:" + t.TempDir() + "/sb.db"
	r := startReplica(t, dsn)
	ctx := context.Background()
	secret, _, err := r.tokens.Create(ctx, "bot", []sb.Scope{sb.ScopeMCP})
	if err != nil {
		t.Fatal(err)
	}
	list, err := r.tokens.List(ctx)
	if err != nil || len(list) != 1 || list[0].LastUsedAt != nil {
		t.Fatalf("before use: %+v %v", list, err)
	}
	r.tokens.Authenticate(secret)
	eventually(t, "the use is recorded", func() bool {
		list, _ := r.tokens.List(ctx)
		return len(list) == 1 && list[0].LastUsedAt != nil
	})
	_, _, err = r.tokens.Create(ctx, "bot", []sb.Scope{sb.ScopeMCP})
	if !errors.Is(err, sb.ErrTokenExists) {
		t.Errorf("a second token by one name: %v", err)
	}
	if _, _, err := r.tokens.Create(ctx, "x", []sb.Scope{"root"}); !errors.Is(err, sb.ErrInvalidConfig) {
		t.Errorf("an unknown scope: %v", err)
	}
}

// BenchmarkAuthenticate is the per-request cost of an API token: a hash
// and a map lookup (the last-used write is at most once a minute).
func BenchmarkAuthenticate(b *testing.B) {
	r := startReplica(b, "sqlite:"+b.TempDir()+"/sb.db")
	secret, _, err := r.tokens.Create(context.Background(), "bench", []sb.Scope{sb.ScopeMCP})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := r.tokens.Authenticate(secret); !ok {
			b.Fatal("refused")
		}
	}
}
