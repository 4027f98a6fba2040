package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/oauthclient"
)

// This file hooks OAuth (package oauthclient) into a session's connection
// attempts: the gate before an attempt, the transport of its requests, and
// what its failures mean.

// oauthGate fails an attempt before any request when the server requires
// OAuth and no token can be had without a person: the session waits with
// phase auth and code authorization_required, retrying slowly (another
// replica may authorize it meanwhile; this one restarts it at once). It
// also refreshes an expiring token, once, before the attempt.
func (s *Session) oauthGate(ctx context.Context) *failure {
	if s.cfg.OAuth == nil {
		return nil
	}
	if s.opts.OAuth == nil {
		return fail(sb.PhaseAuth, sb.CodeAuthorizationRequired, retryNever, oauthclient.ErrAuthorizationRequired,
			"%s requires OAuth, and this Switchboard keeps no OAuth tokens (it has no OAuth store)", s.cfg.Name)
	}
	return s.oauthError(s.opts.OAuth.Ready(ctx, s.cfg))
}

// oauthError classifies an error of the token source.
func (s *Session) oauthError(err error) *failure {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, oauthclient.ErrAuthorizationRequired):
		// The token source's errors say why and what to run.
		return fail(sb.PhaseAuth, sb.CodeAuthorizationRequired, retrySlow, err, "%s", s.redact.String(err.Error()))
	}
	retry := retryFast // the authorization server may be down for a moment
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
		retry = retrySlow // it refused: wrong secret, unknown client, bad scope
	}
	return fail(sb.PhaseAuth, sb.CodeAuthorizationFailed, retry, err, "%v", s.redact.String(err.Error()))
}

// withOAuth wraps the transport of a server that requires OAuth.
func (s *Session) withOAuth(rt http.RoundTripper) http.RoundTripper {
	if s.cfg.OAuth == nil || s.opts.OAuth == nil {
		return rt
	}
	return s.opts.OAuth.Transport(rt, s.cfg, nil) // a refused request fails with its own error, which the wire keeps (wire.KindTransport)
}

// oauthFailure rewrites the failure of an attempt of a server that
// requires OAuth: a 401, a 403 or a refused token means that a person must
// authorize it (again, or with more scopes).
func (s *Session) oauthFailure(f *failure, err error) *failure {
	if s.cfg.OAuth == nil {
		return s.oauthHint(f)
	}
	if s.opts.OAuth == nil {
		return f
	}
	if errors.Is(err, oauthclient.ErrAuthorizationRequired) {
		return s.oauthError(err)
	}
	if refusal := s.opts.OAuth.LastRefusal(s.cfg.Name); refusal != nil {
		return s.oauthError(refusal)
	}
	var se *HTTPStatusError
	if f.phase != sb.PhaseAuth || !errors.As(f, &se) {
		return f
	}
	if stepUp := s.opts.OAuth.StepUp(context.Background(), s.cfg.Name); len(stepUp) > 0 && se.StatusCode == http.StatusForbidden {
		return s.oauthError(oauthclient.NewRequiredError(s.cfg.Name, "the server asks for more scopes: "+strings.Join(stepUp, " ")))
	}
	return s.oauthError(oauthclient.NewRequiredError(s.cfg.Name, fmt.Sprintf("HTTP %d from the server", se.StatusCode)))
}

// hintTimeout bounds the probe of oauthHint.
const hintTimeout = 5 * time.Second

// oauthHint adds to the 401 of a server whose config has no "oauth" block
// what to do if the server uses OAuth: its WWW-Authenticate names its
// protected resource metadata (the MCP authorization spec). It asks the
// server once more, without the configured headers, for that challenge.
func (s *Session) oauthHint(f *failure) *failure {
	var se *HTTPStatusError
	if !errors.As(f, &se) || se.StatusCode != http.StatusUnauthorized {
		return f
	}
	ctx, cancel := context.WithTimeout(s.runCtx, hintTimeout)
	defer cancel()
	hc := &http.Client{Transport: s.opts.Egress.Transport(), Timeout: hintTimeout}
	if !oauthclient.NamesResourceMetadata(ctx, s.cfg, hc) {
		return f
	}
	g := *f
	g.msg = fmt.Sprintf("HTTP 401 from %s: the server requires OAuth; run `switchboard server edit %s --oauth`, then `%s`",
		s.redact.String(se.URL), s.cfg.Name, oauthclient.AuthCommand(s.cfg.Name))
	return &g
}
