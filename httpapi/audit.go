package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/audit"
)

// listAudit serves GET /api/v1/audit: the entries the filters select
// (server, tool, principal, outcome, since, until, after, limit), oldest
// first.
func (a *handler) listAudit(w http.ResponseWriter, r *http.Request) {
	q, err := auditQuery(r, a.audit.Now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	es, err := a.audit.Store().ListAudit(r.Context(), q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := api.AuditList{Entries: make([]api.AuditEntry, 0, len(es))}
	for _, e := range es {
		out.Entries = append(out.Entries, auditView(e))
	}
	writeJSON(w, http.StatusOK, out)
}

// auditQuery reads the filters of r. since and until are RFC 3339 times,
// or durations before now ("1h").
func auditQuery(r *http.Request, now time.Time) (sb.AuditQuery, error) {
	v := r.URL.Query()
	q := sb.AuditQuery{Server: v.Get("server"), Name: v.Get("tool"), Principal: v.Get("principal"), Outcome: v.Get("outcome")}
	var err error
	if q.Since, err = auditTime(v.Get("since"), now); err != nil {
		return q, fmt.Errorf("%w: since: %v", errBadRequest, err)
	}
	if q.Until, err = auditTime(v.Get("until"), now); err != nil {
		return q, fmt.Errorf("%w: until: %v", errBadRequest, err)
	}
	for _, f := range []struct {
		name string
		max  int64
		dst  func(int64)
	}{
		{"limit", sb.MaxAuditLimit, func(n int64) { q.Limit = int(n) }},
		{"after", 1<<63 - 1, func(n int64) { q.After = n }},
	} {
		s := v.Get(f.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > f.max {
			return q, fmt.Errorf("%w: %s must be a whole number from 0 to %d, not %q", errBadRequest, f.name, f.max, s)
		}
		f.dst(n)
	}
	return q, nil
}

// auditTime reads a time of the audit query: RFC 3339, or a duration
// before now.
func auditTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-03-01T12:00:00Z) nor a duration before now (90m)", s)
	}
	return t, nil
}

// auditView is e as the API shows it.
func auditView(e sb.AuditEntry) api.AuditEntry {
	v := api.AuditEntry{ID: e.ID, Time: e.Time, Principal: e.Principal, Surface: e.Surface, Toolset: e.Toolset, Kind: string(e.Kind),
		Server: e.Server, Outcome: e.Outcome, DurationMS: float64(e.Duration.Microseconds()) / 1000,
		RequestBytes: e.RequestBytes, ResultBytes: e.ResultBytes, ArgsSHA256: e.ArgsSHA256, Arguments: e.Arguments}
	switch e.Kind {
	case sb.AuditResource:
		v.Resource = e.Name
	case sb.AuditPrompt:
		v.Prompt = e.Name
	case sb.AuditTask:
		v.Task = e.Name
	case sb.AuditAPI:
		v.Request = e.Name
	default:
		v.Tool = e.Name
	}
	return v
}

// audited records the API requests through next that change something:
// every method but GET, HEAD and OPTIONS, except a tool call (POST
// /api/v1/call), which the executor records with its tool. The entry
// names the method and path, the {name} of a servers route as its
// server, the answer's code as its outcome, and the SHA-256 of the body
// (never the body: a config holds secrets).
func (a *handler) audited(next http.Handler) http.Handler {
	if a.audit == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet, r.Method == http.MethodHead, r.Method == http.MethodOptions,
			r.Method == http.MethodPost && r.URL.Path == "/api/v1/call":
			next.ServeHTTP(w, r)
			return
		}
		start := a.audit.Now()
		body := &countedBody{ReadCloser: r.Body, sum: sha256.New()}
		r.Body = body
		aw := &auditWriter{ResponseWriter: w}
		next.ServeHTTP(aw, r)
		e := sb.AuditEntry{Time: start, Kind: sb.AuditAPI, Name: r.Method + " " + r.URL.EscapedPath(), Outcome: aw.outcome(),
			Duration: a.audit.Now().Sub(start), RequestBytes: body.n, ResultBytes: aw.n}
		if strings.HasPrefix(r.URL.Path, "/api/v1/servers/") {
			// The mux set the path's values on r as it routed it.
			e.Server = r.PathValue("name")
		}
		if body.n > 0 {
			e.ArgsSHA256 = hex.EncodeToString(body.sum.Sum(nil))
		}
		a.audit.Record(r.Context(), e, nil)
	})
}

// countedBody counts and hashes what is read of a request body.
type countedBody struct {
	io.ReadCloser
	n   int64
	sum hash.Hash
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	b.sum.Write(p[:n])
	return n, err
}

// auditWriter keeps what the audit log says of an answer: its status,
// its code (writeError tells it), its length.
type auditWriter struct {
	http.ResponseWriter
	status int
	code   sb.Code
	n      int64
}

func (w *auditWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *auditWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// Unwrap is for http.ResponseController, and for unwrapped.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// unwrapped is the ResponseWriter of net/http's server under w's wrappers
// (auditWriter, statusWriter), for http.MaxBytesReader: when a body is
// over its limit it tells the server so through an unexported method of
// the server's own writer (requestTooLarge), which closes the connection
// after the answer, rather than read what follows the limit as the next
// request; no wrapper can forward an unexported method, and
// MaxBytesReader does not look beneath one.
func unwrapped(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func (w *auditWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// outcome is "ok" for a success, the code writeError answered with, or
// "http_STATUS" for a failure answered otherwise.
func (w *auditWriter) outcome() string {
	switch {
	case w.code != "":
		return string(w.code)
	case w.status < 400:
		return "ok"
	}
	return "http_" + strconv.Itoa(w.status)
}

// auditCode tells an auditWriter under w the code of an error answer.
func auditCode(w http.ResponseWriter, code sb.Code) {
	if aw, ok := w.(*auditWriter); ok {
		aw.code = code
	}
}

// withSurface is ctx, of r, marked with the surface r's path reaches,
// for the audit log, if one is kept.
func (a *handler) withSurface(ctx context.Context, r *http.Request) context.Context {
	if a.audit == nil {
		return ctx
	}
	name, toolset := audit.SurfaceOf(r)
	return audit.WithSurface(ctx, name, toolset)
}
