package testserver

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// Script is how one in-process server's connection attempts go, in the
// fake time of a testing/synctest bubble.
type Script struct {
	After     time.Duration // an attempt takes this long
	FailFirst bool          // the first attempt fails (after After); the next ones succeed
	Hang      bool          // every attempt hangs until its startup timeout
}

// Fleet returns a config per script and the dial function (for
// upstream.Options.Dial) that runs them all against one in-process test
// server. A session's Dial cannot see which server it dials; but in a
// bubble it runs exactly one startup timeout before its deadline, and each
// server here gets a startup timeout of its own, which names it.
func Fleet(tb testing.TB, scripts map[string]Script) (map[string]*sb.ServerConfig, func(context.Context) (io.ReadWriteCloser, error)) {
	tb.Helper()
	srv, err := NewInProcess(Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cfgs := make(map[string]*sb.ServerConfig)
	byTimeout := make(map[time.Duration]Script)
	var mu sync.Mutex
	attempts := make(map[time.Duration]int)
	for i, name := range slices.Sorted(maps.Keys(scripts)) {
		ms := int64(60_000 + i)
		cfgs[name] = &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "in-process", StartupTimeoutMS: ms}
		byTimeout[time.Duration(ms)*time.Millisecond] = scripts[name]
	}
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		deadline, _ := ctx.Deadline()
		key := time.Until(deadline)
		sc, ok := byTimeout[key]
		if !ok {
			return nil, fmt.Errorf("no script for a startup timeout of %s", key)
		}
		mu.Lock()
		attempts[key]++
		n := attempts[key]
		mu.Unlock()
		if sc.Hang {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		select {
		case <-time.After(sc.After):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if sc.FailFirst && n == 1 {
			return nil, fmt.Errorf("scripted failure")
		}
		return DialInProcess(srv)(ctx)
	}
	return cfgs, dial
}
