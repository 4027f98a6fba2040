package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// RecoveryResult is the kill -9 scenario: a stdio session whose server
// process is killed while a call is in flight, repeatedly. Times are from
// the kill.
type RecoveryResult struct {
	Iterations int `json:"iterations"`
	// Detect: until the session's OnEvent callback reports "dropped".
	Detect []time.Duration `json:"detect"`
	// Reconnect: until OnEvent reports "connected" again (spawn,
	// initialize and discovery of tools, resources, templates, prompts).
	Reconnect []time.Duration `json:"reconnect"`
	// CallFail: until the call in flight (a 30 s sleep) returns its error.
	CallFail []time.Duration `json:"call_fail"`
	// Baseline: a fresh go-sdk client connecting to a fresh process of the
	// same binary (spawn and initialize), one per iteration, interleaved.
	Baseline []time.Duration `json:"baseline"`
	// BaselineList: the same plus listing tools, resources, templates and
	// prompts, which is what Switchboard's reconnect also does.
	BaselineList []time.Duration `json:"baseline_list"`
	// CallErrors counts the in-flight call's error by kind.
	CallErrors map[string]int `json:"call_errors"`
	// Failures lists iterations that did not complete, and why.
	Failures []string `json:"failures,omitempty"`
}

// recoveryWait bounds each wait of an iteration.
const recoveryWait = 10 * time.Second

type stamped struct {
	reason sb.Reason
	at     time.Time
}

// runRecovery runs cfg.RecoveryIters kill iterations against one session.
//
// The session's FlapWindow is set to 1 ns: by default a second drop within
// 10 s of a transparent reconnect counts as flapping and waits 2 s before
// reconnecting, which back-to-back kills would hit every time.
func runRecovery(ctx context.Context, cfg *Config) (*RecoveryResult, error) {
	events := make(chan stamped, 256)
	opts := &upstream.Options{
		FlapWindow: time.Nanosecond,
		OnEvent: func(e sb.Event) {
			select { // OnEvent must not block
			case events <- stamped{e.Reason, time.Now()}:
			default:
			}
		},
	}
	s, closeFn, err := newSession(ctx, Stdio, cfg.Testserver, opts)
	if err != nil {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	defer closeFn()

	r := &RecoveryResult{CallErrors: map[string]int{}}
	for i := range cfg.RecoveryIters {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The baseline: what a fresh connection costs right now.
		t0 := time.Now()
		cs, pid, err := connectCommand(ctx, cfg.Testserver)
		if err != nil {
			return nil, fmt.Errorf("recovery baseline: %w", err)
		}
		t1 := time.Now()
		_, err1 := cs.ListTools(ctx, nil)
		_, err2 := cs.ListResources(ctx, nil)
		_, err3 := cs.ListResourceTemplates(ctx, nil)
		_, err4 := cs.ListPrompts(ctx, nil)
		t2 := time.Now()
		closeCommand(cs, pid)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("recovery baseline lists: %w", err)
		}
		r.Baseline = append(r.Baseline, t1.Sub(t0))
		r.BaselineList = append(r.BaselineList, t2.Sub(t0))

		detect, reconnect, callFail, kind, err := killOnce(ctx, s, events)
		if err != nil {
			r.Failures = append(r.Failures, fmt.Sprintf("iteration %d: %v", i+1, err))
			cfg.logf("recovery %d/%d: %v", i+1, cfg.RecoveryIters, err)
			continue
		}
		r.Iterations++
		r.Detect = append(r.Detect, detect)
		r.Reconnect = append(r.Reconnect, reconnect)
		r.CallFail = append(r.CallFail, callFail)
		r.CallErrors[kind]++
		cfg.logf("recovery %d/%d: detect %.2fms reconnect %.2fms call failed %.2fms (%s); baseline %.2fms (+lists %.2fms)",
			i+1, cfg.RecoveryIters, millis(detect), millis(reconnect), millis(callFail), kind,
			millis(t1.Sub(t0)), millis(t2.Sub(t0)))
	}
	return r, nil
}

// killOnce waits for the session to be connected, starts a long call, kills
// the server process with SIGKILL once the server has received the call,
// and times the drop, the reconnect and the call's failure.
func killOnce(ctx context.Context, s *upstream.Session, events chan stamped) (detect, reconnect, callFail time.Duration, kind string, err error) {
	wctx, cancel := context.WithTimeout(ctx, recoveryWait)
	defer cancel()
	info, err := s.WaitFor(wctx, func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.PID > 0 })
	if err != nil {
		return 0, 0, 0, "", fmt.Errorf("not connected: %v (status %s)", err, info.Status)
	}
	pid := info.PID
	for len(events) > 0 { // forget the events of the previous iteration
		<-events
	}

	type outcome struct {
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	cctx, ccancel := context.WithTimeout(ctx, 3*recoveryWait)
	defer ccancel()
	go func() {
		_, err := s.CallTool(cctx, "sleep", map[string]any{"ms": 30000}, sb.InvokeOptions{})
		done <- outcome{err, time.Now()}
	}()
	if !waitCallStarted(wctx, s, pid) {
		ccancel()
		<-done
		return 0, 0, 0, "", fmt.Errorf("the server (pid %d) never logged the sleep call", pid)
	}

	kill := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		ccancel()
		<-done
		return 0, 0, 0, "", fmt.Errorf("kill %d: %w", pid, err)
	}
	var gotDrop, gotConn, gotCall bool
	timeout := time.NewTimer(recoveryWait)
	defer timeout.Stop()
	for !gotDrop || !gotConn || !gotCall {
		select {
		case e := <-events:
			switch {
			case e.reason == sb.ReasonDropped && !gotDrop:
				gotDrop, detect = true, e.at.Sub(kill)
			case e.reason == sb.ReasonConnected && gotDrop && !gotConn:
				gotConn, reconnect = true, e.at.Sub(kill)
			}
		case o := <-done:
			gotCall, callFail = true, o.at.Sub(kill)
			kind = errorKind(o.err)
		case <-timeout.C:
			if !gotCall {
				ccancel()
				<-done
			}
			return 0, 0, 0, "", fmt.Errorf("after the kill: dropped=%v connected=%v call returned=%v within %s", gotDrop, gotConn, gotCall, recoveryWait)
		}
	}
	return detect, reconnect, callFail, kind, nil
}

// waitCallStarted polls the session's stderr ring until the server with
// pid has logged the sleep call ("testserver: call sleep" after its
// "started pid=N" line).
func waitCallStarted(ctx context.Context, s *upstream.Session, pid int) bool {
	started := "started pid=" + strconv.Itoa(pid) + " "
	for ctx.Err() == nil {
		lines := s.Logs()
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], started) {
				for _, l := range lines[i+1:] {
					if strings.Contains(l, "call sleep") {
						return true
					}
				}
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// errorKind classifies the in-flight call's error.
func errorKind(err error) string {
	switch {
	case err == nil:
		return "no error (!)"
	case errors.Is(err, upstream.ErrConnectionLost):
		return "ErrConnectionLost"
	case errors.Is(err, upstream.ErrTimeout):
		return "ErrTimeout"
	case errors.Is(err, upstream.ErrCancelled):
		return "ErrCancelled"
	case errors.Is(err, upstream.ErrUnavailable):
		return "ErrUnavailable"
	}
	return fmt.Sprintf("%T", err)
}
