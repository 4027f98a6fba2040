package daemon

// This file holds what serve and stdio set up around the daemon itself:
// the logger, the traces, and serve's profiles for benchmarks.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/switchboard-mcp/switchboard/telemetry"
)

// NewLogger returns the text logger of --log-level level, writing to w.
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// StartTraces turns tracing on if the OTEL_* environment asks for it
// (telemetry.Setup), and returns the function that sends what is still
// buffered, within 5 seconds, when the command ends. The exporter writes
// only to its collector and its errors go to log: switchboard stdio's
// stdout stays the MCP channel.
func StartTraces(ctx context.Context, log *slog.Logger, version string) (stop func(), err error) {
	shutdown, on, err := telemetry.Setup(ctx, os.Getenv, version, log)
	if err != nil {
		return nil, err
	}
	if on {
		log.Info("exporting OpenTelemetry traces (OTLP over HTTP)")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("flushing traces", "error", err)
		}
	}, nil
}

// StartCPUProfile starts writing a CPU profile to path (--cpu-profile);
// stop ends it.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// HeapProfileAtStop returns a context that ends when ctx does, once a
// heap profile has been written to path (--mem-profile): the shutdown
// that follows frees the servers' sessions, so a profile written at exit
// would show none.
func HeapProfileAtStop(ctx context.Context, path string, log *slog.Logger) context.Context {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() {
		defer cancel()
		if err := writeHeapProfile(path); err != nil {
			log.Error("--mem-profile: the heap profile was not written", "err", err)
		}
	})
	return inner
}

// writeHeapProfile writes the heap profile as of a fresh collection, so
// that its in-use figures are the live heap.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
