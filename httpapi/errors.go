package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// Errors of the API's own, beside those of the layers below.
var (
	errBadRequest = sb.NewError(sb.CodeBadRequest, "bad request")
	errTooLarge   = sb.NewError(sb.CodeTooLarge, "request body too large")
)

// classify describes err for the API: its code and phase come from the
// domain (sb.CodeOf, sb.PhaseOf), its HTTP status from the code alone.
// A failure of the database itself is told in its own words: the layers
// above it add the driver's ("sqlite: create ...").
func classify(err error) (int, api.ErrorInfo) {
	code := sb.CodeOf(err)
	msg := err.Error()
	var dbe *sb.DatabaseError
	if errors.As(err, &dbe) {
		msg = dbe.Error()
	}
	return Status(code), api.ErrorInfo{Code: code, Message: msg, Phase: sb.PhaseOf(err), Fields: fieldErrors(err)}
}

// Status is the HTTP status the API answers a failure of code with.
func Status(code sb.Code) int {
	switch code {
	case sb.CodeBadRequest, sb.CodeInvalidConfig, sb.CodeBadAddress, sb.CodeInvalidArguments, sb.CodeInvalidOptions:
		return http.StatusBadRequest
	case sb.CodeUnauthorized:
		return http.StatusUnauthorized
	case sb.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case sb.CodeForbidden, sb.CodeForbiddenHost, sb.CodeForbiddenOrigin:
		return http.StatusForbidden
	case sb.CodeNotFound, sb.CodeUnknownServer, sb.CodeUnknownTool:
		return http.StatusNotFound
	case sb.CodeExists, sb.CodeConflict:
		return http.StatusConflict
	case sb.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case sb.CodeTimeout:
		return http.StatusGatewayTimeout
	case sb.CodeDisabled, sb.CodeUnavailable, sb.CodeShuttingDown:
		return http.StatusServiceUnavailable
	case sb.CodeConnectionLost, sb.CodeResultTooLarge, sb.CodeServerError, sb.CodeToolError, sb.CodeAuthorizationFailed:
		return http.StatusBadGateway
	case sb.CodeCancelled:
		return 499 // the client went away; nobody reads this
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (a *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if name := r.PathValue("name"); name != "" {
		err = a.inServerWords(name, 0, err)
	}
	status, info := classify(err)
	auditCode(w, info.Code)
	if status >= 500 && status != http.StatusServiceUnavailable {
		a.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "code", info.Code, "error", info.Message, "cause", err.Error())
	}
	writeJSON(w, status, api.ErrorBody{Error: info})
}

// bodyError says what is wrong with a request body that encoding/json
// refused, in the API's words: the JSON field that is wrong and what it
// must be, never a Go type or struct name ("cannot unmarshal array into Go
// value of type struct { switchboard.ServerConfig; ...}" helps nobody who
// sent the body). v is what the body was decoded into.
func bodyError(err error, v any) error {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
	)
	switch {
	case errors.As(err, &te):
		path, ft := jsonPath(reflect.TypeOf(v), te.Field)
		if path == "" {
			return fmt.Errorf("%w: the body must be a JSON object, not %s", errBadRequest, article(te.Value))
		}
		want := kindWords(te.Type)
		switch {
		case ft != nil && ft.Kind() == reflect.Map && ft.Elem() == te.Type:
			return fmt.Errorf("%w: %s: every value must be %s, not %s", errBadRequest, path, want, article(te.Value))
		case ft != nil && ft.Kind() == reflect.Slice && ft.Elem() == te.Type:
			return fmt.Errorf("%w: %s: every element must be %s, not %s", errBadRequest, path, want, article(te.Value))
		}
		return fmt.Errorf("%w: %s: must be %s, not %s", errBadRequest, path, want, article(te.Value))
	case errors.As(err, &se):
		return fmt.Errorf("%w: the body is not valid JSON: %s (at byte %d)", errBadRequest, se.Error(), se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the body is not valid JSON: it ends before the value does", errBadRequest)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("%w: unknown field %s", errBadRequest, field)
	}
	return fmt.Errorf("%w: the body is not valid JSON: %s", errBadRequest, strings.TrimPrefix(err.Error(), "json: "))
}

// jsonPath turns the Field of a json.UnmarshalTypeError ("ServerConfig.retry.max_attempts")
// into the path a client wrote ("retry.max_attempts"), leaving out the Go
// names of embedded structs, and returns the type of the field it names
// (nil if it cannot be followed from t).
func jsonPath(t reflect.Type, field string) (string, reflect.Type) {
	if field == "" {
		return "", nil
	}
	var parts []string
	for _, seg := range strings.Split(field, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var next reflect.Type
		embedded := false
		if t != nil && t.Kind() == reflect.Struct {
			next, embedded = structField(t, seg)
		}
		if !embedded {
			parts = append(parts, seg)
		}
		t = next
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.Join(parts, "."), t
}

// structField finds the field of t that a segment of an
// UnmarshalTypeError's Field names: by JSON name, or, for an embedded
// struct, by its Go name (then embedded is true). Embedded structs are
// searched too, as encoding/json does.
func structField(t reflect.Type, seg string) (ft reflect.Type, embedded bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Name == seg:
			return f.Type, true
		case name == seg || (name == "" && f.Name == seg):
			return f.Type, false
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, emb := structField(et, seg); ft != nil {
					return ft, emb
				}
			}
		}
	}
	return nil, false
}

// kindWords names the JSON value a Go type is decoded from.
func kindWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// article puts "a" or "an" before a JSON kind encoding/json names
// ("array", "number", "string", "object", "bool" or a number's text).
func article(value string) string {
	switch value {
	case "array", "object":
		return "an " + value
	case "bool":
		return "true or false"
	case "number", "string":
		return "a " + value
	}
	return value // "number 1.5", "number -1": encoding/json's own words
}

// methods are the methods a route may be registered for, in the order an
// Allow header lists them.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// noRoute answers a request that no route of mux takes: 405 with an Allow
// header when the path is a route's under other methods (the catch-all "/"
// pattern would otherwise hide that from the mux, which answers 405 only
// when no pattern matches), else 404.
func noRoute(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeMethodNotAllowed,
				Message: fmt.Sprintf("%s is not a method of %s; it takes %s", r.Method, r.URL.Path, strings.Join(allow, ", "))}})
			return
		}
		writeJSON(w, http.StatusNotFound, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeNotFound,
			Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)}})
	}
}

// reworded is an error told in other words: the message is msg, the code
// and phase still err's.
type reworded struct {
	err error
	msg string
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// inServerWords says a store's refusal about the server name (not found,
// exists, changed since version was read) in the API's words, without the
// store's ("sqlite: update \"x\": ..."), and with what to do about it.
// Other errors, and one reworded already, are returned unchanged.
func (a *handler) inServerWords(name string, version int64, err error) error {
	var done *reworded
	if errors.As(err, &done) {
		return err
	}
	switch sb.CodeOf(err) {
	case sb.CodeNotFound:
		return &reworded{err, fmt.Sprintf("no server named %q (\"switchboard server list\" lists them; GET /api/v1/servers)", name)}
	case sb.CodeExists:
		return &reworded{err, fmt.Sprintf("a server named %q exists already: change it (PUT /api/v1/servers/%s, \"switchboard server edit\") or choose another name", name, name)}
	case sb.CodeConflict:
		msg := fmt.Sprintf("%q was changed by someone else", name)
		if version != 0 {
			msg += fmt.Sprintf(" since version %d was read", version)
		}
		if v, gerr := a.reg.Get(name); gerr == nil {
			msg += fmt.Sprintf(" (it is at version %d now)", v.Version)
		}
		return &reworded{err, msg + ": read it again and make the change to what it is now"}
	}
	return err
}
