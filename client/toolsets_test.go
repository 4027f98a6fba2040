package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// newToolsetDaemon is newDaemon with toolsets and tokens, as serve wires
// them.
func newToolsetDaemon(t *testing.T) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := sqlitetest.Store(t)
	toolsets, err := registry.NewToolsets(st, log)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := registry.NewTokens(st, log)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, &registry.Options{Logger: log, Followers: []registry.Follower{toolsets, tokens}})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ex := executor.New(executor.NewMCP(reg))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: log, Toolsets: toolsets})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Token: token, Logger: log,
		MCP: gw.Handler(), ToolsetMCP: gw.ToolsetHandler(), Toolsets: toolsets, Tokens: tokens}))
	c, err := client.New(srv.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		reg.Shutdown(ctx)
		tokens.Close()
	})
	return c, srv.URL
}

func TestToolsetRoutes(t *testing.T) {
	c, url := newToolsetDaemon(t)
	ctx := context.Background()
	ts := &sb.Toolset{Name: "coder", Description: "repo", Tools: []sb.Selector{{Server: "gh", Tool: "search_*"},
		{Server: "fs", Tool: "read_file", As: "read", Annotations: &sb.ToolAnnotations{ReadOnlyHint: new(true)}}}}
	v, err := c.CreateToolset(ctx, ts)
	if err != nil || v.Version != 1 || !reflect.DeepEqual(v.Toolset, *ts) {
		t.Fatalf("create: %+v, %v", v, err)
	}
	_, err = c.CreateToolset(ctx, ts)
	wantCode(t, "create again", err, http.StatusConflict, sb.CodeExists)
	bad := &sb.Toolset{Name: "bad", Tools: []sb.Selector{{Server: "a", Tool: "x", As: "a__b"}}}
	ce := wantCode(t, "an aggregated name", func() error { _, err := c.CreateToolset(ctx, bad); return err }(), http.StatusBadRequest, sb.CodeInvalidConfig)
	if !strings.Contains(ce.Message, "tools[0].as") {
		t.Errorf("message %q does not name tools[0].as", ce.Message)
	}

	// A selector names its item in "tool", and only there: the spelling
	// "name" is an unknown field like any other.
	for body, want := range map[string]int{
		`{"name":"wire","tools":[{"server":"gh","tool":"search_*"}],"prompts":[{"server":"gh","tool":"review"}]}`: http.StatusCreated,
		`{"name":"old","tools":[{"server":"gh","name":"search_*"}]}`:                                              http.StatusBadRequest,
		`{"name":"old","prompts":[{"server":"gh","name":"review"}]}`:                                              http.StatusBadRequest,
	} {
		status, answer := postRaw(t, url+"/api/v1/toolsets", body)
		if status != want || want == http.StatusBadRequest && !strings.Contains(answer, `unknown field \"name\"`) {
			t.Errorf("POST %s: %d %s, want %d", body, status, answer, want)
		}
	}
	if v, err := c.Toolset(ctx, "wire"); err != nil || len(v.Tools) != 1 || len(v.Prompts) != 1 || v.Tools[0].Tool != "search_*" || v.Prompts[0].Tool != "review" {
		t.Errorf("the toolset sent with \"tool\": %+v, %v", v, err)
	}

	ts.Description = "the repository"
	if v, err = c.UpdateToolset(ctx, "coder", ts, 1); err != nil || v.Version != 2 || v.Description != "the repository" {
		t.Fatalf("update: %+v, %v", v, err)
	}
	_, err = c.UpdateToolset(ctx, "coder", ts, 1)
	wantCode(t, "update at an old version", err, http.StatusConflict, sb.CodeConflict)
	list, err := c.Toolsets(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "coder" || list[0].Version != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if got, err := c.Toolset(ctx, "coder"); err != nil || !reflect.DeepEqual(got, list[0]) {
		t.Errorf("get: %+v, %v", got, err)
	}
	if err := c.DeleteToolset(ctx, "coder", 2); err != nil {
		t.Fatal(err)
	}
	_, err = c.Toolset(ctx, "coder")
	wantCode(t, "get deleted", err, http.StatusNotFound, sb.CodeNotFound)
}

func TestTokenRoutes(t *testing.T) {
	c, url := newToolsetDaemon(t)
	ctx := context.Background()
	created, err := c.CreateToken(ctx, "ci", []sb.Scope{sb.ScopeMCP})
	if err != nil || created.Name != "ci" || !strings.HasPrefix(created.Secret, sb.TokenPrefix) {
		t.Fatalf("create: %+v, %v", created, err)
	}
	_, err = c.CreateToken(ctx, "ci", []sb.Scope{sb.ScopeMCP})
	wantCode(t, "create again", err, http.StatusConflict, sb.CodeExists)
	_, err = c.CreateToken(ctx, "x", []sb.Scope{"root"})
	wantCode(t, "an unknown scope", err, http.StatusBadRequest, sb.CodeInvalidConfig)

	// The token is a credential, within its scope: /mcp yes, the API no.
	ci, err := client.New(url, created.Secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Close()
	_, err = ci.Servers(ctx)
	wantCode(t, "an mcp token on the API", err, http.StatusForbidden, sb.CodeForbidden)

	list, err := c.Tokens(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "ci" || !reflect.DeepEqual(list[0].Scopes, []sb.Scope{sb.ScopeMCP}) {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if err := c.RevokeToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	_, err = ci.Servers(ctx)
	wantCode(t, "a revoked token", err, http.StatusUnauthorized, sb.CodeUnauthorized)
	wantCode(t, "revoke again", c.RevokeToken(ctx, "ci"), http.StatusNotFound, sb.CodeNotFound)
}

// postRaw posts body with the admin token, as a client that is not the Go
// one would, and returns the status and the answer.
func postRaw(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}
