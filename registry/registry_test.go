package registry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
	"github.com/switchboard-mcp/switchboard/upstream"
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

// TestLoadStartsWithBoundedConcurrencyWithoutBlocking: Load returns before
// any server has connected, and the servers then start StartConcurrency at
// a time: never more, and a slot that frees is taken at once. Every
// connection (Options.Dial to the in-process test server) is held until
// the test lets one through, so the order is the test's; under synctest
// "before" and "at once" are exact, and synctest.Wait shows every dial
// that is waiting.
func TestLoadStartsWithBoundedConcurrencyWithoutBlocking(t *testing.T) {
	const n, limit = 40, 16
	synctest.Test(t, func(t *testing.T) {
		srv, err := testserver.NewInProcess(testserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu                  sync.Mutex
			dialing, maxDialing int
			through             = make(chan struct{}) // each value lets one held dial connect
		)
		dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
			mu.Lock()
			dialing++
			maxDialing = max(maxDialing, dialing)
			mu.Unlock()
			defer func() {
				mu.Lock()
				dialing--
				mu.Unlock()
			}()
			select {
			case <-through:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return testserver.DialInProcess(srv)(ctx)
		}
		held := func() int {
			mu.Lock()
			defer mu.Unlock()
			return dialing
		}
		var st listStore
		for i := range n {
			st = append(st, sb.StoredServer{Version: 1, Config: sb.ServerConfig{
				Name: fmt.Sprintf("s%03d", i), Transport: sb.TransportStdio, Command: "in-process"}})
		}
		reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler), StartConcurrency: limit,
			Session: upstream.Options{Dial: dial, HealthInterval: -1}})
		t.Cleanup(func() { reg.Shutdown(context.Background()) }) // ends held dials too, if the test fails

		begin := time.Now()
		if err := reg.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d != 0 {
			t.Errorf("Load returned after %v, with every connection held: it waited for servers to connect", d)
		}
		synctest.Wait()
		if got := held(); got != limit {
			t.Fatalf("%d servers dialing at once, want %d (the bound, reached)", got, limit)
		}
		select {
		case <-reg.Loaded():
			t.Fatal("Loaded is closed while every server is still connecting")
		default:
		}
		for i := range n {
			through <- struct{}{}
			synctest.Wait()
			if got, want := held(), min(limit, n-i-1); got != want {
				t.Fatalf("after %d connected: %d servers dialing, want %d", i+1, got, want)
			}
		}
		select {
		case <-reg.Loaded():
		default:
			t.Fatal("every server has connected, and Loaded is not closed")
		}
		for _, v := range reg.List() {
			if v.Runtime.Status != sb.StatusConnected {
				t.Errorf("%s: %s %+v", v.Name, v.Runtime.Status, v.Runtime.Error)
			}
		}
		if maxDialing != limit {
			t.Errorf("at most %d servers dialed at once, want %d", maxDialing, limit)
		}
		if err := reg.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// listStore is a Store of fixed servers, for tests that only Load.
type listStore []sb.StoredServer

func (s listStore) List(context.Context) ([]sb.StoredServer, error) { return s, nil }
func (listStore) Get(context.Context, string) (sb.StoredServer, error) {
	return sb.StoredServer{}, sb.ErrNotFound
}
func (listStore) Create(context.Context, *sb.ServerConfig) (sb.StoredServer, error) {
	return sb.StoredServer{}, errors.ErrUnsupported
}
func (listStore) Update(context.Context, *sb.ServerConfig, int64) (sb.StoredServer, error) {
	return sb.StoredServer{}, errors.ErrUnsupported
}
func (listStore) Delete(context.Context, string, int64) error { return errors.ErrUnsupported }
func (listStore) Close() error                                { return nil }

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
	if err := reg.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
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
