package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/switchboard-mcp/switchboard/telemetry"
)

// startTraces turns tracing on if the OTEL_* environment asks for it
// (telemetry.Setup), and returns the function that sends what is still
// buffered, within 5 seconds, when the command ends. The exporter writes
// only to its collector and its errors go to log: switchboard stdio's
// stdout stays the MCP channel.
func startTraces(ctx context.Context, log *slog.Logger, version string) (stop func(), err error) {
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
