package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// This file keeps a remote server's configured headers (its API key, its
// bearer token) on the server's own origin. Two things would otherwise
// carry them elsewhere: net/http copies custom headers to the target of a
// redirect (and the round-tripper puts them on every request it sees), and
// a legacy SSE server names, in its endpoint event, the URL that every
// message is posted to. Either may point at any host. Following a redirect
// without the headers would fail as unauthenticated anyway, and hide where
// the server pointed; so a request for another origin is refused, with an
// error that names it, and the config can be fixed to the URL it points at.
// A redirect within the origin (a moved path) is followed, headers and all.

// maxRedirects bounds a chain of same-origin redirects, as net/http's
// default policy does.
const maxRedirects = 10

// RedirectError is a request of a remote session that was headed for
// another origin than the configured URL's, and was not sent: a redirect
// (Status is its HTTP status) or a legacy SSE endpoint event (Status 0).
type RedirectError struct {
	Status int    // the redirect's HTTP status; 0 for an SSE endpoint
	From   string // the configured URL's origin
	To     string // where the server pointed (scrubbed of the config's secrets)
}

func (e *RedirectError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("the SSE server posts its messages to %s, another origin than %s: refused, since the server's configured headers are never sent to another origin",
			e.To, e.From)
	}
	return fmt.Sprintf("HTTP %d redirect to %s, another origin than %s: not followed, since the server's configured headers are never sent to another origin",
		e.Status, e.To, e.From)
}

// origin returns u's origin as RFC 6454 compares them: scheme, host and
// port, the default port made explicit and the host in lower case.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// OriginGuard refuses requests for other origins than the configured
// URL's. redact scrubs the config's secrets from the URL it reports (a
// redirect may carry the configured URL's query along); refused hears of
// every refusal.
type OriginGuard struct {
	origin  string
	redact  func(string) string
	refused func(*RedirectError)
}

// NewOriginGuard returns the guard of a session of the server at endpoint
// (its configured URL). redact scrubs the URLs that errors report; refused,
// if not nil, hears of every refusal.
func NewOriginGuard(endpoint string, redact func(string) string, refused func(*RedirectError)) *OriginGuard {
	g := &OriginGuard{redact: redact, refused: refused}
	if u, err := url.Parse(endpoint); err == nil {
		g.origin = origin(u)
	}
	return g
}

// Check returns a *RedirectError if req is for another origin. status is
// that of the redirect that led to req, or 0.
func (g *OriginGuard) Check(req *http.Request, status int) error {
	if origin(req.URL) == g.origin {
		return nil
	}
	err := &RedirectError{Status: status, From: g.origin, To: g.redact(req.URL.String())}
	if g.refused != nil {
		g.refused(err)
	}
	return err
}

// CheckRedirect is the http.Client's redirect policy: same-origin
// redirects only, at most maxRedirects in a row. It runs before the
// redirected request is made, so a refused one never leaves.
func (g *OriginGuard) CheckRedirect(req *http.Request, via []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	if err := g.Check(req, status); err != nil {
		return err
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// SameOrigin reports whether two URLs have the same origin; an URL that
// does not parse, or has no host, has none.
func SameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && origin(ua) == origin(ub)
}
