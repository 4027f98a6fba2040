// Package reliability is Switchboard's reliability suite. It has no code
// of its own outside its tests: chaos scenarios (kill -9 cycles under load,
// a flapping server, a black-holed remote server, one slow server among
// fast ones, HTTP session expiry under load) and crash safety of
// `switchboard serve` (kill -9 during concurrent config writes, on SQLite
// and PostgreSQL).
//
// Every test runs real processes (the fault-injecting test server of
// internal/testserver, the switchboard binary) on 127.0.0.1 and stops them
// by pid. The default run is short (the whole package within about 90 s
// under -race on two cores); -reliability.long runs the long variants:
//
//	go test -race ./reliability/ -v
//	go test -race ./reliability/ -v -timeout 30m -args -reliability.long
//
// Each test logs what it measured as lines "FIGURE name=value unit", which
// RELIABILITY.md at the repository root collects.
package reliability
