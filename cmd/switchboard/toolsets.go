package main

import (
	"context"
	"fmt"
	"log/slog"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/registry"
)

// loadToolsetsAndTokens reads the toolsets and the API tokens of st, for
// serve and stdio.
func loadToolsetsAndTokens(ctx context.Context, st sb.Store, log *slog.Logger) (*registry.Toolsets, *registry.Tokens, error) {
	toolsets, err := registry.NewToolsets(st, log)
	if err != nil {
		return nil, nil, err
	}
	tokens, err := registry.NewTokens(st, log)
	if err != nil {
		return nil, nil, err
	}
	if err := toolsets.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	if err := tokens.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	return toolsets, tokens, nil
}
