// Command sbab compares switchboard builds back to back (bench.CompareBuilds):
// each build's /mcp/{name} in front of a stdio testserver, interleaved with
// a go-sdk client calling a testserver directly over stdio (with -http: in
// front of a Streamable HTTP testserver, interleaved with a client calling
// it directly), and prints the p50 and p99 each build adds, its CPU per
// call, and each build's p50 against the first's, paired by repetition. For
// changes of a few µs, which one run of sbbench cannot tell apart on a
// shared machine.
//
// Usage, from the repository root:
//
//	go build -o /tmp/before ./cmd/switchboard   # at the base commit
//	go build -o /tmp/after ./cmd/switchboard    # with the change
//	go run ./bench/cmd/sbab /tmp/before /tmp/after
//	go run ./bench/cmd/sbab -reps 16 -payload 32768 -calls 300 /tmp/before /tmp/after
//	go run ./bench/cmd/sbab -http /tmp/before /tmp/after
//
// A build may be a script that execs a binary, to compare environments
// (GOMAXPROCS=1 exec /tmp/after "$@"). It builds the testserver with
// "go build" unless -testserver names a binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-mcp/switchboard/bench"
)

func main() {
	reps := flag.Int("reps", 12, "repetitions (blocks per side)")
	calls := flag.Int("calls", 2000, "sequential calls per side and repetition")
	warmup := flag.Int("warmup", 200, "warm-up calls before each block")
	payload := flag.Int("payload", 1024, "bytes of echo text")
	testserver := flag.String("testserver", "", "testserver `binary` (default: go build ./internal/testserver/cmd/testserver)")
	overHTTP := flag.Bool("http", false, "put the builds in front of a testserver serving Streamable HTTP, compared with a client calling it directly (default: stdio)")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: sbab [flags] BUILD [BUILD...]   (switchboard binaries; the first is the baseline)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := bench.ABConfig{Testserver: *testserver, Builds: flag.Args(), Reps: *reps, Calls: *calls, Warmup: *warmup, Payload: *payload, HTTP: *overHTTP}
	if !*quiet {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if cfg.Testserver == "" {
		bin, dir, err := bench.BuildTestserver()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sbab: building the testserver:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		cfg.Testserver = bin
	}
	res, err := bench.CompareBuilds(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbab:", err)
		os.Exit(1)
	}
	fmt.Print(res.Markdown())
}
