// Command sbbench runs Switchboard's benchmark harness (package bench) and
// prints the results as markdown: library overhead against a direct go-sdk
// client and a hand-written floor, allocation attribution, recovery from
// kill -9, slow tools, many idle sessions, and the daemon: the overhead of
// its /mcp endpoint, and its start-up, memory and shutdown with thousands
// of servers.
//
// Usage, from the repository root:
//
//	go run ./bench/cmd/sbbench                      # everything, several minutes
//	go run ./bench/cmd/sbbench -quick               # a tiny run, seconds
//	go run ./bench/cmd/sbbench -reps 7 -out results.md -run overhead,recovery
//	go run ./bench/cmd/sbbench -run endpoint,daemon-scale -json r.json
//	go run ./bench/cmd/sbbench -merge a.json,b.json  # pool earlier -json runs, run nothing
//
// Progress goes to stderr, the markdown to stdout (and -out). It builds the
// testserver with "go build" unless -testserver names a binary, and the
// switchboard binary (for endpoint and daemon-scale) unless -switchboard
// does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchboard-mcp/switchboard/bench"
)

func main() {
	bench.MaybeRunChild() // the stdio floor server is this binary, re-executed
	os.Exit(run())
}

func run() int {
	var (
		quick      = flag.Bool("quick", false, "a tiny run of every scenario (seconds; the figures mean little)")
		reps       = flag.Int("reps", 0, "repetitions of each overhead and endpoint comparison (default 11 and 5; -quick: 1)")
		calls      = flag.Int("calls", 0, "sequential calls per side and repetition of the overhead and endpoint scenarios (default 1000)")
		concCalls  = flag.Int("concurrent-calls", 0, "calls over the callers per side and repetition (default 2000)")
		warmup     = flag.Int("warmup", 0, "warm-up calls before each measured block (default 100)")
		daemonReps = flag.Int("daemon-reps", 0, "repetitions of the daemon-scale scenario (default 3; -quick: 1)")
		daemonIdle = flag.Duration("daemon-idle", 0, "how long a daemon idles, once every server connected, before its memory is sampled (default 2s)")
		out        = flag.String("out", "", "also write the markdown to `file`")
		jsonOut    = flag.String("json", "", "write the raw results as JSON to `file`")
		scenarios  = flag.String("run", "", "comma-separated `scenarios` to run: "+strings.Join(bench.AllScenarios, ",")+" (default all)")
		testserver = flag.String("testserver", "", "testserver `binary` (default: go build ./internal/testserver/cmd/testserver)")
		sbBinary   = flag.String("switchboard", "", "switchboard `binary` for endpoint and daemon-scale (default: go build ./cmd/switchboard)")
		profileDir = flag.String("profile", "", "write pprof allocs profiles around each profiled block, and serve's CPU profile of the endpoint scenario, to `dir`")
		quiet      = flag.Bool("quiet", false, "no progress lines on stderr")
		merge      = flag.String("merge", "", "pool the comma-separated -json `files` of earlier runs into one report instead of running")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sbbench: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		return 2
	}

	if *merge != "" {
		var reports []*bench.Report
		for _, path := range strings.Split(*merge, ",") {
			r, err := bench.ReadReport(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, "sbbench:", err)
				return 1
			}
			reports = append(reports, r)
		}
		rep, err := bench.Merge(reports...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
		return output(rep, *out, *jsonOut)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin := *testserver
	if bin == "" {
		path, dir, err := bench.BuildTestserver()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = path
	}

	cfg := bench.FullConfig(bin, *reps)
	if *quick {
		cfg = bench.QuickConfig(bin)
		if *reps > 0 {
			cfg.Reps, cfg.EndpointReps = *reps, *reps
		}
	}
	if *calls > 0 {
		cfg.Calls = *calls
	}
	if *concCalls > 0 {
		cfg.ConcurrentCalls = *concCalls
	}
	if *warmup > 0 {
		cfg.Warmup = *warmup
	}
	if *daemonReps > 0 {
		cfg.DaemonReps = *daemonReps
	}
	if *daemonIdle > 0 {
		cfg.DaemonSettle = *daemonIdle
	}
	if *scenarios != "" {
		cfg.Scenarios = strings.Split(*scenarios, ",")
	}
	cfg.Switchboard = *sbBinary
	if cfg.Switchboard == "" && cfg.NeedsSwitchboard() {
		path, dir, err := bench.BuildSwitchboard()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		cfg.Switchboard = path
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
		cfg.ProfileDir = *profileDir
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}

	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbbench:", err)
		return 1
	}
	return output(rep, *out, *jsonOut)
}

// output prints rep as markdown and writes it to out and, as JSON, to
// jsonOut when they are set.
func output(rep *bench.Report, out, jsonOut string) int {
	md := rep.Markdown()
	fmt.Print(md)
	if out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
	}
	if jsonOut != "" {
		if err := writeJSON(jsonOut, rep); err != nil {
			fmt.Fprintln(os.Stderr, "sbbench:", err)
			return 1
		}
	}
	return 0
}

func writeJSON(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(io.Writer(f))
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
