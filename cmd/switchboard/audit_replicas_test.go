package main

import (
	"context"
	"testing"

	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// Two replicas on one PostgreSQL database write one audit log: a call
// through each is seen by the audit -f of both.
func TestAuditIsSharedByReplicas(t *testing.T) {
	db := pgtest.NewDatabase(t)
	ctx := context.Background()
	one := startServe(t, daemontest.Options{DB: db})
	two := startServe(t, daemontest.Options{DB: db})
	one.ok(t, "server", "add", "echoer", "--command", testserver.Binary(t), "--wait")
	follows := []*stream{
		one.startStream(t, "audit", "-f", "-o", "json", "--tool", "echo"),
		two.startStream(t, "audit", "-f", "-o", "json", "--tool", "echo"),
	}
	var sums []string
	for i, d := range []*target{one, two} {
		c := d.serve.Client(nil)
		waitServer(t, c, "echoer", "echoer connected", connected)
		text := "from replica " + string(rune('1'+i))
		if _, err := c.Call(ctx, "echoer/echo", map[string]any{"text": text}, client.CallOptions{}); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sha(`{"text":"`+text+`"}`))
	}
	// The two entries may be stored in either order: each replica writes
	// its batch within a second of its call, so the second call's batch
	// can commit first and take the smaller id. Reading them in call
	// order lost the first line to the second wait.
	var res []string
	for _, sum := range sums {
		res = append(res, `"args_sha256":"`+sum+`"`)
	}
	for _, f := range follows {
		f.waitLines(t, res...)
	}
}
