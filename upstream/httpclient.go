package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"

	"github.com/switchboard-mcp/switchboard/egress"
)

// This file is the HTTP client under a remote link's connection (the wire
// reads and writes MCP; this carries its requests): the config's headers
// on every request of the configured origin (and none for any other:
// origin.go), who sends it (loop.go), and every request tied to the
// link's context, so that closing a link aborts all of its requests at
// once.

// roundTripper is the transport of a remote link's HTTP client.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	guard   *egress.OriginGuard // refuses requests for other origins, which must not get the headers
	via     *egress.Instance    // says who sends every request (loop.go)
	reach   *egress.Reach       // learns whom the server reaches from its answers (loop.go)
	linkCtx context.Context
	// onBlocked hears of every request refused for its address
	// (netpolicy.go), so that the attempt names the policy.
	onBlocked func(err *egress.BlockedAddressError)
	// onRefused hears of every request that found nothing listening (the
	// standalone stream's reconnection too): the server is gone.
	onRefused func(err error)
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.guard != nil {
		// A redirect is refused before it gets here (checkRedirect); what
		// remains is the legacy SSE endpoint event, which names any URL.
		if err := t.guard.Check(req, 0); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.linkCtx, cancel)
	release := func() {
		stop()
		cancel()
	}
	req = req.Clone(ctx)
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.via != nil {
		req.Header.Set(egress.ViaHeader, t.via.Via())
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		release()
		var blocked *egress.BlockedAddressError
		if t.onBlocked != nil && errors.As(err, &blocked) {
			t.onBlocked(blocked)
		}
		if t.onRefused != nil && errors.Is(err, syscall.ECONNREFUSED) && t.linkCtx.Err() == nil {
			t.onRefused(err)
		}
		return nil, err
	}
	if t.reach != nil && resp.StatusCode < 300 {
		t.reach.Answered(resp.Header.Values(egress.ReachHeader))
	}
	resp.Body = &releaseOnClose{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releaseOnClose frees a request's context when its body is closed.
type releaseOnClose struct {
	io.ReadCloser
	release func()
}

func (b *releaseOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
