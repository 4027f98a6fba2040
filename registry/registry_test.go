package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) { testserver.RemoveBinary(); os.Exit(code) }),
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	)
}

// seed stores n stdio test servers.
func seed(t *testing.T, n int, args ...string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i := range n {
		cfg := &sb.ServerConfig{Name: fmt.Sprintf("s%03d", i), Transport: sb.TransportStdio,
			Command: testserver.Binary(t), Args: args, ProtocolVersion: "2025-11-25"}
		if _, err := st.Create(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestLoadStartsWithBoundedConcurrencyWithoutBlocking(t *testing.T) {
	const n, limit = 40, 16
	st := seed(t, n, "-startup-delay", "300ms")
	var (
		mu                sync.Mutex
		inFlight, maxSeen int
	)
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler), StartConcurrency: limit})
	events, cancel := reg.Subscribe()
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			mu.Lock()
			switch e.Reason {
			case sb.ReasonStarting:
				inFlight++
				maxSeen = max(maxSeen, inFlight)
			case sb.ReasonConnected, sb.ReasonAttemptFailed:
				inFlight--
			}
			mu.Unlock()
		}
	}()
	begin := time.Now()
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 250*time.Millisecond {
		t.Errorf("Load took %v: it must not wait for servers to connect", d)
	}
	select {
	case <-reg.Loaded():
	case <-time.After(30 * time.Second):
		t.Fatal("servers did not all start")
	}
	elapsed := time.Since(begin)
	for _, v := range reg.List() {
		if v.Runtime.Status != sb.StatusConnected {
			t.Errorf("%s: %s %+v", v.Name, v.Runtime.Status, v.Runtime.Error)
		}
	}
	if err := reg.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if maxSeen != limit {
		t.Errorf("at most %d sessions started at once, want exactly %d (the bound, reached)", maxSeen, limit)
	}
	// Three waves of 300 ms cold starts: at least 900 ms.
	if elapsed < 900*time.Millisecond {
		t.Errorf("all %d started in %v: the bound was not applied", n, elapsed)
	}
}

func TestStartupOf100StdioServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 100 processes")
	}
	st := seed(t, 100)
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
	begin := time.Now()
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	loadReturned := time.Since(begin)
	<-reg.Loaded()
	all := time.Since(begin)
	connected := 0
	for _, v := range reg.List() {
		if v.Runtime.Status == sb.StatusConnected {
			connected++
		}
	}
	stopBegin := time.Now()
	if err := reg.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("100 stdio servers: Load returned after %v, all %d connected after %v, shutdown took %v",
		loadReturned.Round(time.Millisecond), connected, all.Round(time.Millisecond), time.Since(stopBegin).Round(time.Millisecond))
	if connected != 100 {
		t.Fatalf("%d of 100 connected", connected)
	}
}

func TestShutdownStopsEveryServerWithinTenSeconds(t *testing.T) {
	st := seed(t, 20)
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
	reg.Load(context.Background())
	<-reg.Loaded()
	var pids []int
	for _, v := range reg.List() {
		pids = append(pids, v.Runtime.PID)
	}
	begin := time.Now()
	if err := reg.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Errorf("process %d is still there: %s", pid, b)
		}
	}
	if _, err := reg.Get("s000"); err == nil {
		t.Error("the registry still answers after Shutdown")
	}
}
