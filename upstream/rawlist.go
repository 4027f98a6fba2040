package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
	"github.com/switchboard-mcp/switchboard/wire"
)

// This file lists a server's tools, resources, templates and prompts
// without the go-sdk's ClientSession: the request is written and its
// result read as bytes by the link's own connection (package wire), as a
// call's is.
//
// Why: the go-sdk decodes every message and every result through a stream
// decoder whose first read allocates 32 KiB, and its ListTools decodes
// every tool's input schema once more that way (filterValidTools). Starting
// 1,000 servers of 14 tools each made about 800 MB of such garbage, and the
// collector's work on it was a third of serve's CPU during start-up. Here
// a result is decoded once, from the bytes, by the same decoder with the
// same settings (segmentio's, case-sensitive, nesting bounded by the
// frame's scanner), so the lists are the objects the go-sdk would have
// made; ListTools' validation is kept (validTools).
//
// A link that negotiated 2026-07-28 adds that protocol's per-request
// _meta (link.newMeta) to every list request.

// rawPages lists method page by page, as the go-sdk's iterators do:
// decode each result into a new R, yield what page returns, follow the
// cursor until it is empty. The cache hints of the pages read are folded
// into hint, if not nil (AddCacheHint).
func rawPages[R any, T any](ctx context.Context, l *link, method string, hint *mcp.Cacheable, page func(*R) ([]T, string, mcp.Cacheable)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		for {
			res := new(R)
			if err := l.rawRequest(ctx, method, cursor, res); err != nil {
				yield(zero, err)
				return
			}
			items, next, h := page(res)
			if hint != nil {
				AddCacheHint(hint, h)
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// rawRequest sends a list request (with cursor, if set) and decodes its
// result into out. Errors read as the go-sdk's do: `calling "tools/list":
// ...`, wrapping the wire's *wire.Error.
func (l *link) rawRequest(ctx context.Context, method, cursor string, out any) error {
	params := make([]byte, 0, 32+len(cursor)+len(l.newMeta))
	params = append(params, '{')
	if cursor != "" {
		params = append(params, `"cursor":`...)
		params = rawjson.AppendString(params, cursor)
	}
	if len(l.newMeta) > 0 {
		if cursor != "" {
			params = append(params, ',')
		}
		params = append(params, `"_meta":{`...)
		params = append(params, l.newMeta...)
		params = append(params, '}')
	}
	params = append(params, '}')
	result, err := l.conn.Call(ctx, &wire.Request{Method: method, Params: params})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("calling %q: %w", method, err)
	}
	if _, err := segjson.Parse(result, out, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return fmt.Errorf("calling %q: %w", method, err)
	}
	return nil
}

// toolPages lists the server's tools.
func (l *link) toolPages(ctx context.Context, hint *mcp.Cacheable) iter.Seq2[*mcp.Tool, error] {
	return rawPages(ctx, l, "tools/list", hint, func(r *mcp.ListToolsResult) ([]*mcp.Tool, string, mcp.Cacheable) {
		return l.session.validTools(r.Tools), r.NextCursor, r.Cacheable
	})
}

func (l *link) resourcePages(ctx context.Context, hint *mcp.Cacheable) iter.Seq2[*mcp.Resource, error] {
	return rawPages(ctx, l, "resources/list", hint, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string, mcp.Cacheable) {
		return r.Resources, r.NextCursor, r.Cacheable
	})
}

func (l *link) templatePages(ctx context.Context, hint *mcp.Cacheable) iter.Seq2[*mcp.ResourceTemplate, error] {
	return rawPages(ctx, l, "resources/templates/list", hint, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string, mcp.Cacheable) {
		return r.ResourceTemplates, r.NextCursor, r.Cacheable
	})
}

func (l *link) promptPages(ctx context.Context, hint *mcp.Cacheable) iter.Seq2[*mcp.Prompt, error] {
	return rawPages(ctx, l, "prompts/list", hint, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string, mcp.Cacheable) {
		return r.Prompts, r.NextCursor, r.Cacheable
	})
}

// ListHints are the cache hints (SEP-2549: ttlMs, cacheScope) of a
// server's lists as last listed, every page of a list folded into one
// (AddCacheHint). A list that carried none (a server of 2025-11-25 or
// before) has the zero mcp.Cacheable: an empty CacheScope, which a
// server that sends hints never leaves empty.
type ListHints struct {
	Tools, Resources, Templates, Prompts mcp.Cacheable
}

// AddCacheHint folds the hints c of one result into those of a result
// made of several (pages of one list, or the lists of several servers),
// h: the shortest ttlMs, and private if any said so (or said a scope
// other than public, which no cache may take for public). A c that says
// nothing (empty CacheScope) changes nothing.
func AddCacheHint(h *mcp.Cacheable, c mcp.Cacheable) {
	switch {
	case c.CacheScope == "":
		return
	case h.CacheScope == "":
		*h = c
		return
	}
	h.TTLMs = min(h.TTLMs, c.TTLMs)
	if h.CacheScope != c.CacheScope || c.CacheScope != "public" {
		h.CacheScope = "private"
	}
}

// setLogLevel asks the server for log messages of level and up.
func (l *link) setLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	params := make([]byte, 0, 32+len(l.newMeta))
	params = append(params, `{"level":`...)
	params = rawjson.AppendString(params, string(level))
	params = append(params, '}')
	_, err := l.conn.Call(ctx, &wire.Request{Method: "logging/setLevel", Params: params})
	return err
}

// validTools drops what the go-sdk's ListTools drops (filterValidTools): a
// null tool, and one whose input schema has invalid x-mcp-header
// annotations, which the go-sdk could not call over Streamable HTTP. It
// says which, as the go-sdk would with a logger.
func (s *Session) validTools(tools []*mcp.Tool) []*mcp.Tool {
	out := tools[:0]
	for _, t := range tools {
		if t == nil {
			s.log.Warn("the server listed a null tool; it is left out")
			continue
		}
		// The schema is kept as the JSON it marshals to, which toolInfos
		// then takes as it is instead of marshalling the schema again.
		var schema []byte
		if t.InputSchema != nil {
			if b, err := json.Marshal(t.InputSchema); err == nil {
				schema = b
				t.InputSchema = json.RawMessage(b)
			}
		}
		if err := headerAnnotationsError(schema); err != nil {
			s.log.Warn("the server listed a tool with invalid x-mcp-header annotations; it is left out",
				"tool", t.Name, "error", err)
			continue
		}
		out = append(out, t)
	}
	return out
}

// headerAnnotationsError checks the x-mcp-header annotations of an input
// schema, encoded, as the go-sdk's validateParamHeaderAnnotations does: it
// reads only what the check needs (a schema that does not read so
// passes), then requires every annotation to sit on
// a property of a primitive type, to be a valid header name, and to be
// unique, case-insensitively, across the schema. A schema that does not
// mention x-mcp-header, nearly every one, passes without being decoded
// again.
func headerAnnotationsError(b []byte) error {
	if !rawjson.Contains(b, []byte(`"x-mcp-header"`)) {
		return nil
	}
	var s headerSchemaProperty
	if _, err := segjson.Parse(b, &s, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return nil
	}
	return headerAnnotationsIn(s.Properties, "", map[string]bool{})
}

// headerSchemaProperty is what the check reads of a schema (the go-sdk's
// type of the same name).
type headerSchemaProperty struct {
	Type       string                          `json:"type"`
	XMCPHeader json.RawMessage                 `json:"x-mcp-header,omitempty"`
	Properties map[string]headerSchemaProperty `json:"properties,omitempty"`
}

func headerAnnotationsIn(props map[string]headerSchemaProperty, prefix string, seen map[string]bool) error {
	for name, p := range props {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if p.XMCPHeader != nil {
			if p.Type != "string" && p.Type != "integer" && p.Type != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header can only be applied to primitive types (integer, string, boolean), got %q", path, p.Type)
			}
			var header string
			if err := json.Unmarshal(p.XMCPHeader, &header); err != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", path)
			}
			for _, c := range header {
				if !isTokenChar(c) {
					return fmt.Errorf("property %q: x-mcp-header value %q contains invalid character %q", path, header, c)
				}
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return fmt.Errorf("property %q: duplicate x-mcp-header value %q (case-insensitive)", path, header)
			}
			seen[lower] = true
		}
		if len(p.Properties) > 0 {
			if err := headerAnnotationsIn(p.Properties, path, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// isTokenChar reports whether c may appear in an HTTP field name (tchar).
func isTokenChar(c rune) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
