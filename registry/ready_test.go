package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// fleet returns a config per script and the session options that run them
// in process, for testing/synctest bubbles (see testserver.Fleet).
func fleet(t *testing.T, scripts map[string]testserver.Script) (map[string]*sb.ServerConfig, upstream.Options) {
	t.Helper()
	cfgs, dial := testserver.Fleet(t, scripts)
	return cfgs, upstream.Options{Logger: slog.New(slog.DiscardHandler), Dial: dial}
}

// loaded stores cfgs and returns a registry over them, loaded, all in the
// calling bubble.
func loaded(t *testing.T, so upstream.Options, cfgs ...*sb.ServerConfig) *registry.Registry {
	t.Helper()
	ctx := context.Background()
	st := sqlitetest.Store(t, cfgs...)
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler), Session: so})
	t.Cleanup(func() { reg.Shutdown(ctx) })
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return reg
}

// settleTime returns how long WaitSettled(limit, names...) takes, failing
// the test on an error.
func settleTime(t *testing.T, reg *registry.Registry, limit time.Duration, names ...string) time.Duration {
	t.Helper()
	start := time.Now()
	if err := reg.WaitSettled(context.Background(), limit, names...); err != nil {
		t.Fatalf("WaitSettled(%v, %q): %v", limit, names, err)
	}
	return time.Since(start)
}

func TestWaitSettledWaitsForEveryFirstAttemptOnly(t *testing.T) {
	scripts := map[string]testserver.Script{
		"ok":   {After: time.Second},
		"bad":  {After: 2 * time.Second, FailFirst: true}, // retried 2 s (±20 %) later
		"slow": {After: 3 * time.Second},
		"off":  {Hang: true},
	}
	for _, tc := range []struct {
		names []string
		want  time.Duration
	}{
		{nil, 3 * time.Second},
		{[]string{"ok"}, time.Second},
		{[]string{"bad"}, 2 * time.Second}, // its failure, not its retry
		{[]string{"ok", "bad"}, 2 * time.Second},
		{[]string{"off", "nobody"}, 0}, // disabled and unknown: nothing to wait for
	} {
		t.Run(fmt.Sprint(tc.names), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfgs, so := fleet(t, scripts)
				disabled := false
				cfgs["off"].Enabled = &disabled
				reg := loaded(t, so, slices.Collect(maps.Values(cfgs))...)
				if d := settleTime(t, reg, time.Minute, tc.names...); d != tc.want {
					t.Errorf("settled after %v, want %v", d, tc.want)
				}
			})
		})
	}
}

func TestWaitSettledIsBoundedFromEachServersStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"hung": {Hang: true}, "later": {Hang: true}})
		reg := loaded(t, so, cfgs["hung"])
		if d := settleTime(t, reg, 10*time.Second); d != 10*time.Second {
			t.Errorf("settled after %v, want the 10s limit", d)
		}
		if v, _ := reg.Get("hung"); v.Runtime.Status != sb.StatusConnecting {
			t.Errorf("hung is %s, want still connecting", v.Runtime.Status)
		}
		// Its start is 10 s ago: nothing is awaited from it any more.
		if d := settleTime(t, reg, 10*time.Second); d != 0 {
			t.Errorf("second wait took %v, want 0", d)
		}
		// A server created now gets its own 10 s.
		time.Sleep(5 * time.Second)
		if _, err := reg.Create(context.Background(), cfgs["later"]); err != nil {
			t.Fatal(err)
		}
		if d := settleTime(t, reg, 10*time.Second); d != 10*time.Second {
			t.Errorf("wait for a server created at runtime took %v, want 10s", d)
		}
	})
}

func TestWaitSettledFollowsAReplacedSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"a": {Hang: true}, "b": {After: time.Second}})
		reg := loaded(t, so, cfgs["a"])
		go func() {
			time.Sleep(2 * time.Second)
			// A new startup timeout reconnects a, now with b's script.
			next := cfgs["b"].Clone()
			next.Name = "a"
			if _, err := reg.Update(context.Background(), "a", next, 0); err != nil {
				t.Error(err)
			}
		}()
		if d := settleTime(t, reg, time.Minute, "a"); d != 3*time.Second {
			t.Errorf("settled after %v, want 3s: the replacement connected 1s after the update", d)
		}
	})
}

func TestWaitSettledEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"hung": {Hang: true}})
		reg := loaded(t, so, cfgs["hung"])
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := reg.WaitSettled(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitSettled = %v, want the context's deadline", err)
		}
	})
}

func TestMaxTotalTimeoutIsTheStoredConfigs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfgs, so := fleet(t, map[string]testserver.Script{"p": {}})
		reg := loaded(t, so, cfgs["p"])
		if d := reg.MaxTotalTimeout("p"); d != 0 {
			t.Errorf("unset: %v", d)
		}
		next := cfgs["p"].Clone()
		next.MaxTotalTimeoutMS = 90_000
		if _, err := reg.Update(context.Background(), "p", next, 0); err != nil {
			t.Fatal(err)
		}
		if d := reg.MaxTotalTimeout("p"); d != 90*time.Second {
			t.Errorf("after an update: %v, want 1m30s", d)
		}
		if d := reg.MaxTotalTimeout("nobody"); d != 0 {
			t.Errorf("unknown server: %v", d)
		}
	})
}
