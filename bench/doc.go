// Package bench measures Switchboard: the overhead of a tool call through
// upstream.Session.CallTool and executor.Execute against a direct go-sdk
// client and against a hand-written JSON-RPC floor, the allocations behind
// it, recovery from a killed stdio server, throughput under slow tools,
// the memory of many idle sessions; and the daemon, `switchboard serve`
// run as the built binary: what its /mcp endpoint adds to a call against
// the same client calling the upstream directly (scenario "endpoint"), and
// its start-up, memory and shutdown with 1,000 stdio or 2,000 remote
// servers (scenario "daemon-scale").
//
// Run everything and print the results as markdown with
//
//	go run ./bench/cmd/sbbench            # the full run, several minutes
//	go run ./bench/cmd/sbbench -quick     # a tiny run, seconds
//
// The same scenarios run as a test (TestHarnessQuick, tiny, no timing
// assertions) and the call paths as testing.B benchmarks:
//
//	go test -run='^$' -bench=. -benchtime=100x ./bench/
//
// Method. The machine is shared and noisy, so comparisons are made inside
// one run: every side of a comparison is set up once, and the repetitions
// interleave the sides (the order rotates from one repetition to the next),
// so that a ratio compares measurements taken moments apart. Each figure is
// reported as the median over the repetitions with its spread (min–max).
package bench
