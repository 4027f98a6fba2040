package audit

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	sb "github.com/switchboard-mcp/switchboard"
)

// surfaceKey carries the surface of a call in its context.
type surfaceKey struct{}

type surface struct{ name, toolset string }

// WithSurface returns ctx carrying the surface a call arrived on
// (sb.SurfaceMCP, ...) and, for sb.SurfaceToolset, the toolset's name;
// ctx itself if it carries one already: the outermost surface is the one
// the caller reached (switchboard stdio's context reaches the gateway's
// mirrors, an HTTP request's reaches the relay).
func WithSurface(ctx context.Context, name, toolset string) context.Context {
	if HasSurface(ctx) {
		return ctx
	}
	s := fixedSurfaces[name]
	if s == nil || toolset != "" {
		s = &surface{name, toolset}
	}
	return context.WithValue(ctx, surfaceKey{}, s)
}

// fixedSurfaces are the surfaces without a toolset, made once: a request
// of one costs the context's value and no more.
var fixedSurfaces = map[string]*surface{}

func init() {
	for _, name := range []string{sb.SurfaceMCP, sb.SurfaceMCPServer, sb.SurfaceToolset, sb.SurfaceAPI, sb.SurfaceStdio} {
		fixedSurfaces[name] = &surface{name: name}
	}
}

// HasSurface reports whether ctx carries a surface.
func HasSurface(ctx context.Context) bool {
	_, ok := ctx.Value(surfaceKey{}).(*surface)
	return ok
}

// SurfaceFrom returns the surface ctx carries, and its toolset; "" if
// none.
func SurfaceFrom(ctx context.Context) (name, toolset string) {
	if s, ok := ctx.Value(surfaceKey{}).(*surface); ok {
		return s.name, s.toolset
	}
	return "", ""
}

// SurfaceOf is the surface that the path of r reaches: /mcp, /mcp/{name},
// /toolsets/{name}/mcp, or else the API.
func SurfaceOf(r *http.Request) (name, toolset string) {
	p := r.URL.Path
	switch {
	case p == "/mcp" || p == "/mcp/":
		return sb.SurfaceMCP, ""
	case strings.HasPrefix(p, "/mcp/"):
		return sb.SurfaceMCPServer, ""
	case strings.HasPrefix(p, "/toolsets/"):
		set, _, _ := strings.Cut(strings.TrimPrefix(p, "/toolsets/"), "/")
		return sb.SurfaceToolset, set
	}
	return sb.SurfaceAPI, ""
}

// attemptKey carries the *attempt of a call in its context.
type attemptKey struct{}

// attempt is one call attempt of a surface, whose entry is owed.
type attempt struct{ recorded atomic.Bool }

// Attempt returns ctx marked as the context of one call attempt: an entry
// that Record makes with it (or with a context made from it) is noted, so
// that the surface can tell, once the attempt has ended, whether anything
// recorded it (Recorded), and record a failure that came before the
// executor (an unknown tool) itself.
func Attempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptKey{}, &attempt{})
}

// Recorded reports whether an entry was recorded with ctx, marked by
// Attempt; false if ctx is not.
func Recorded(ctx context.Context) bool {
	a, ok := ctx.Value(attemptKey{}).(*attempt)
	return ok && a.recorded.Load()
}

// noteRecorded marks ctx's attempt, if any, as recorded.
func noteRecorded(ctx context.Context) {
	if a, ok := ctx.Value(attemptKey{}).(*attempt); ok {
		a.recorded.Store(true)
	}
}
