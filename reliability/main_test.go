package reliability

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// longRun selects the long variants. It is a flag of the test binary, so it
// goes after -args: go test ./reliability/ -args -reliability.long.
var longRun = flag.Bool("reliability.long", false, "run the long variants of the reliability suite (minutes instead of seconds)")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(leakOptions(),
		// goleak's Cleanup replaces its own exit, so it must exit itself.
		goleak.Cleanup(func(code int) {
			testserver.RemoveBinary()
			daemontest.RemoveBinary()
			os.Exit(code)
		}))...)
}

// leakOptions are the goroutines that may outlive a test without being a
// leak: the keep-alive loops of idle connections in net/http's shared
// transport, which belong to the transport, not to a session.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}
}

// pick returns the short or the long variant of a parameter.
func pick[T any](short, long T) T {
	if *longRun {
		return long
	}
	return short
}

// figure logs one measured value in the fixed format RELIABILITY.md is
// assembled from: "FIGURE name=value unit".
func figure(t testing.TB, name string, value any, unit string) {
	t.Helper()
	var v string
	switch x := value.(type) {
	case time.Duration:
		v = strconv.FormatFloat(float64(x)/float64(time.Millisecond), 'f', 1, 64)
	case float64:
		v = strconv.FormatFloat(x, 'f', 1, 64)
	default:
		v = fmt.Sprint(x)
	}
	t.Logf("FIGURE %s=%s %s", name, v, unit)
}

// quantile returns the q-quantile (0..1) of ds by the nearest-rank method;
// zero for no samples.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// quietLogger discards the sessions' logs: hundreds of expected drops would
// bury the test's own output. Failures are described by the tests.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// outcomes tallies the results of tool calls: successes, empty successes
// (no error but no content: the worst bug class, peers.md §4.1), wrong
// answers, and failures by their typed kind.
type outcomes struct {
	mu      sync.Mutex
	ok      int
	empty   int
	wrong   int
	failed  map[string]int
	untyped []string // the first few failures that match no typed kind
}

// callKinds are the typed failures a call may end with, in the order they
// are tested (a *TimeoutError also matches context.DeadlineExceeded, so
// ErrTimeout comes before anything generic).
var callKinds = []struct {
	name string
	err  error
}{
	{"connection_lost", upstream.ErrConnectionLost},
	{"unavailable", upstream.ErrUnavailable},
	{"timeout", upstream.ErrTimeout},
	{"cancelled", upstream.ErrCancelled},
	{"server_error", upstream.ErrServerError},
	{"tool_error", upstream.ErrToolError},
	{"shutdown", upstream.ErrShutdown},
}

// kindOf names the typed kind of a call's error, or "" for none.
func kindOf(err error) string {
	for _, k := range callKinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// record tallies one call that was asked to echo want.
func (o *outcomes) record(r *upstream.Result, err error, want string) {
	var res *mcp.CallToolResult
	if r != nil {
		res, _ = r.Decode()
	}
	o.recordDecoded(res, err, want)
}

// recordDecoded is record for a result decoded.
func (o *outcomes) recordDecoded(res *mcp.CallToolResult, err error, want string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed == nil {
		o.failed = make(map[string]int)
	}
	switch {
	case err != nil:
		k := kindOf(err)
		if k == "" {
			k = "untyped"
			if len(o.untyped) < 5 {
				o.untyped = append(o.untyped, fmt.Sprintf("%T: %v", err, err))
			}
		}
		o.failed[k]++
	case res == nil || len(res.Content) == 0:
		o.empty++
	default:
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want {
			o.wrong++
		} else {
			o.ok++
		}
	}
}

func (o *outcomes) okCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ok
}

// count is the number of failures of one kind (see callKinds).
func (o *outcomes) count(kind string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed[kind]
}

func (o *outcomes) failures() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.failed {
		n += c
	}
	return n
}

// report logs the tally as figures under prefix and fails the test for any
// empty success, wrong answer or untyped failure.
func (o *outcomes) report(t testing.TB, prefix string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	figure(t, prefix+".calls_ok", o.ok, "calls")
	figure(t, prefix+".calls_empty", o.empty, "calls")
	figure(t, prefix+".calls_wrong", o.wrong, "calls")
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range o.failed {
			if !yield(k) {
				return
			}
		}
	}) {
		figure(t, prefix+".calls_failed_"+k, o.failed[k], "calls")
	}
	if o.empty > 0 {
		t.Errorf("%d calls succeeded with no content: a failure was reported as an empty success", o.empty)
	}
	if o.wrong > 0 {
		t.Errorf("%d calls returned another call's answer or garbage", o.wrong)
	}
	if n := o.failed["untyped"]; n > 0 {
		t.Errorf("%d calls failed with an untyped error, e.g.:\n%s", n, strings.Join(o.untyped, "\n"))
	}
}
