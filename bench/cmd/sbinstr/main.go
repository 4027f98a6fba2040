// Command sbinstr counts the instructions a relay executes per relayed
// tools/call, under valgrind's callgrind: each switchboard build's
// /mcp/{name} in front of a stdio testserver, and the floor relay
// (bench/cmd/floorrelay) in front of the same testserver, unsandboxed
// both. An instruction count depends far less on the machine's load than
// CPU time does, so two builds (or a build and the floor) can be compared
// on a busy machine; not wholly, since the Go runtime's own work (the
// collector, timers) varies from run to run: repeat and take the median.
// It is not CPU time: the kernel's work (syscalls, the scheduler) and
// cache misses are not in it.
//
// Usage, from the repository root (needs valgrind):
//
//	go build -o /tmp/before ./cmd/switchboard   # at the base commit
//	go build -o /tmp/after ./cmd/switchboard    # with the change
//	go run ./bench/cmd/sbinstr /tmp/before /tmp/after
//	go run ./bench/cmd/sbinstr -payload 32768 -protocol 2026-07-28 /tmp/after
//
// Each relay runs under callgrind; after the warm-up calls its counters
// are zeroed (callgrind_control -z), the measured calls made one at a
// time, and the counters dumped (callgrind_control -d): the dump's total
// over the calls is the figure, startup and warm-up excluded.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/bench"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

func main() {
	calls := flag.Int("calls", 200, "measured calls per relay")
	warmup := flag.Int("warmup", 50, "warm-up calls before the counters are zeroed")
	payload := flag.Int("payload", 1024, "bytes of echo text")
	protocol := flag.String("protocol", "2025-11-25", "the client's protocol version at the builds' /mcp/{name}")
	testserver := flag.String("testserver", "", "testserver `binary` (default: go build ./internal/testserver/cmd/testserver)")
	floor := flag.Bool("floor", true, "measure the floor relay too (go build ./bench/cmd/floorrelay)")
	keep := flag.String("keep", "", "keep the callgrind dumps in `dir`, for callgrind_annotate")
	gogc := flag.String("gogc", "", "the relays' GOGC (off: no collection, a steadier count of the rest)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: sbinstr [flags] BUILD [BUILD...]   (switchboard binaries)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(flag.Args(), *testserver, *keep, *gogc, *floor, *protocol, *calls, *warmup, *payload); err != nil {
		fmt.Fprintln(os.Stderr, "sbinstr:", err)
		os.Exit(1)
	}
}

func run(builds []string, testserver, keep, gogc string, floor bool, protocol string, calls, warmup, payload int) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return errors.New("valgrind is not installed (apt-get install valgrind)")
	}
	dir, err := os.MkdirTemp("", "sbinstr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if testserver == "" {
		if testserver, err = gobuild.Build("./internal/testserver/cmd/testserver", filepath.Join(dir, "testserver")); err != nil {
			return err
		}
	}
	m := &meter{dir: cmp.Or(keep, dir), gogc: gogc, calls: calls, warmup: warmup, text: bench.PayloadText(payload)}
	fmt.Printf("instructions per relayed tools/call (callgrind), %d B echo, %d calls after %d warm-up, one at a time\n", payload, calls, warmup)
	var floorPer float64
	if floor {
		bin, err := gobuild.Build("./bench/cmd/floorrelay", filepath.Join(dir, "floorrelay"))
		if err != nil {
			return err
		}
		if floorPer, err = m.floor(bin, testserver); err != nil {
			return fmt.Errorf("the floor relay: %w", err)
		}
		fmt.Printf("%-40s %12.0f\n", "floor relay", floorPer)
	}
	for _, b := range builds {
		// Callgrind aborts now and then on a signal that comes during
		// another's handling (serve's SIGCHLD): a build gets three tries.
		var per float64
		for range 3 {
			if per, err = m.build(b, testserver, protocol); err == nil {
				break
			}
			fmt.Fprintf(os.Stderr, "sbinstr: %s: %v\n", b, err)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		line := fmt.Sprintf("%-40s %12.0f", b+" ("+protocol+")", per)
		if floorPer > 0 {
			line += fmt.Sprintf("   %.2fx the floor", per/floorPer)
		}
		fmt.Println(line)
	}
	return nil
}

type meter struct {
	dir, gogc     string
	calls, warmup int
	text          string
	n             int // relays measured so far: names their dumps
}

// callgrind returns the argv that runs argv under callgrind, its dumps
// named in m.dir by prefix. Without asynchronous preemption (callgrind
// aborts on the signal the Go runtime preempts goroutines with) and
// without RDTSCP (valgrind does not emulate it).
func (m *meter) callgrind(prefix string, argv ...string) []string {
	env := []string{"env", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off"}
	if m.gogc != "" {
		env = append(env, "GOGC="+m.gogc)
	}
	return append(append(env, "valgrind", "--tool=callgrind", "-q", "--callgrind-out-file="+filepath.Join(m.dir, prefix+".%p")), argv...)
}

// build measures one switchboard build's /mcp/NAME in front of testserver.
func (m *meter) build(bin, testserver, protocol string) (float64, error) {
	m.n++
	prefix := fmt.Sprintf("serve%d", m.n)
	wrapper := filepath.Join(m.dir, prefix+".sh")
	script := "#!/bin/sh\nexec " + shellJoin(m.callgrind(prefix, bin)) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return 0, err
	}
	log, err := os.Create(filepath.Join(m.dir, prefix+".log"))
	if err != nil {
		return 0, err
	}
	defer log.Close()
	ctx := context.Background()
	d, err := daemontest.StartProcess(ctx, daemontest.Options{
		Binary: wrapper, DB: "sqlite:" + filepath.Join(m.dir, prefix+".db"), LogLevel: "info",
		OnLine:       func(line string) { fmt.Fprintln(log, line) },
		StartTimeout: 5 * time.Minute, StopGrace: 2 * time.Minute,
	})
	if err != nil {
		return 0, err
	}
	defer d.Stop()
	api := d.Client(&client.Options{HTTPClient: &http.Client{Timeout: 5 * time.Minute}})
	if _, err := api.CreateServer(ctx, &sb.ServerConfig{Name: "up", Transport: sb.TransportStdio, Command: testserver, ProtocolVersion: "2025-11-25",
		// Unsandboxed, as the floor relay's child: bubblewrap's and
		// slirp4netns's processes make the SIGCHLDs callgrind trips on.
		Sandbox: &sb.SandboxConfig{Enabled: new(false)}}); err != nil {
		return 0, err
	}
	if err := waitConnected(ctx, api, "up"); err != nil {
		return 0, err
	}
	hc := &http.Client{Transport: d.Transport(nil)}
	return m.measure(d.PID, prefix, d.MCPURL+"/up", hc, protocol)
}

// floor measures the floor relay in front of testserver.
func (m *meter) floor(bin, testserver string) (float64, error) {
	argv := m.callgrind("floor", bin, "--", testserver)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
			url = u
			break
		}
	}
	if url == "" {
		return 0, errors.New("no LISTEN line")
	}
	go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()
	return m.measure(cmd.Process.Pid, "floor", url, &http.Client{}, "2025-11-25")
}

// measure connects to url, makes the warm-up calls, zeroes pid's
// counters, makes the measured calls and returns the instructions per
// call of the dump that follows.
func (m *meter) measure(pid int, prefix, url string, hc *http.Client, protocol string) (float64, error) {
	ctx := context.Background()
	defer hc.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sbinstr"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	args := map[string]any{"text": m.text}
	call := func(n int) error {
		for range n {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			if err != nil {
				return err
			}
			if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != m.text {
				return fmt.Errorf("unexpected result %+v", res)
			}
		}
		return nil
	}
	if err := call(m.warmup); err != nil {
		return 0, err
	}
	if err := control(pid, "-z"); err != nil {
		return 0, err
	}
	if err := call(m.calls); err != nil {
		return 0, err
	}
	if err := control(pid, "-d"); err != nil {
		return 0, err
	}
	dumps, _ := filepath.Glob(filepath.Join(m.dir, fmt.Sprintf("%s.%d.*", prefix, pid)))
	if len(dumps) != 1 {
		return 0, fmt.Errorf("%d dumps of pid %d, want 1", len(dumps), pid)
	}
	ir, err := totalIr(dumps[0])
	if err != nil {
		return 0, err
	}
	return float64(ir) / float64(m.calls), nil
}

// control runs callgrind_control with flag on pid.
func control(pid int, flag string) error {
	out, err := exec.Command("callgrind_control", flag, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("callgrind_control %s %d: %v: %s", flag, pid, err, out)
	}
	return nil
}

// totalIr returns the instruction count of a callgrind dump.
func totalIr(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		for _, key := range []string{"summary: ", "totals: "} {
			if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
				return strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no summary line", path)
}

func waitConnected(ctx context.Context, api *client.Client, name string) error {
	var v sb.ServerView
	var err error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		v, err = api.Server(ctx, name)
		if err == nil && v.Runtime.Status == sb.StatusConnected {
			return nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			break // serve has exited
		}
	}
	return fmt.Errorf("%s not connected: %+v (%v)", name, v.Runtime, err)
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
