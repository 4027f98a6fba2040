package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// ErrorBody is the JSON shape of every error the API returns.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo describes one error: a stable code, a message a person can act
// on, and, for failures of a server, the phase where it failed.
type ErrorInfo struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Phase   sb.Phase `json:"phase,omitempty"`
}

// classify maps an error to an HTTP status and its JSON description.
func classify(err error) (int, ErrorInfo) {
	info := ErrorInfo{Message: err.Error()}
	var ve *sb.ValidationError
	var ce *upstream.CallError
	var te *upstream.TimeoutError
	var mbe *http.MaxBytesError
	if errors.As(err, &ce) {
		info.Phase = ce.Phase
	}
	switch {
	case errors.As(err, &mbe):
		info.Code = "too_large"
		return http.StatusRequestEntityTooLarge, info
	case errors.As(err, &ve), errors.Is(err, sb.ErrInvalidConfig):
		info.Code = "invalid_config"
		return http.StatusBadRequest, info
	case errors.Is(err, errBadRequest):
		info.Code = "bad_request"
		return http.StatusBadRequest, info
	case errors.Is(err, executor.ErrBadAddress):
		info.Code = "bad_address"
		return http.StatusBadRequest, info
	case errors.Is(err, upstream.ErrInvalidArguments):
		info.Code = "invalid_arguments"
		return http.StatusBadRequest, info
	case errors.Is(err, upstream.ErrInvalidOptions):
		info.Code = "invalid_options"
		return http.StatusBadRequest, info
	case errors.Is(err, sb.ErrNotFound):
		info.Code = "not_found"
		return http.StatusNotFound, info
	case errors.Is(err, executor.ErrUnknownServer):
		info.Code = "unknown_server"
		return http.StatusNotFound, info
	case errors.Is(err, upstream.ErrUnknownTool):
		info.Code = "unknown_tool"
		return http.StatusNotFound, info
	case errors.Is(err, sb.ErrExists):
		info.Code = "exists"
		return http.StatusConflict, info
	case errors.Is(err, sb.ErrConflict):
		info.Code = "conflict"
		return http.StatusConflict, info
	case errors.As(err, &te):
		info.Code = "timeout"
		info.Phase = sb.PhaseToolCall
		return http.StatusGatewayTimeout, info
	case errors.Is(err, registry.ErrDisabled):
		info.Code = "disabled"
		return http.StatusServiceUnavailable, info
	case errors.Is(err, upstream.ErrUnavailable):
		info.Code = "unavailable"
		return http.StatusServiceUnavailable, info
	case errors.Is(err, upstream.ErrConnectionLost):
		info.Code = "connection_lost"
		return http.StatusBadGateway, info
	case errors.Is(err, upstream.ErrResultTooLarge):
		info.Code = "result_too_large"
		return http.StatusBadGateway, info
	case errors.Is(err, upstream.ErrServerError):
		info.Code = "server_error"
		return http.StatusBadGateway, info
	case errors.Is(err, upstream.ErrCancelled):
		info.Code = "cancelled"
		return 499, info // the client went away; nobody reads this
	case errors.Is(err, registry.ErrClosed):
		info.Code = "shutting_down"
		return http.StatusServiceUnavailable, info
	}
	info.Code = "internal"
	return http.StatusInternalServerError, info
}

var errBadRequest = errors.New("bad request")

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, info := classify(err)
	if status >= 500 && status != http.StatusServiceUnavailable {
		a.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "code", info.Code, "error", info.Message)
	}
	writeJSON(w, status, ErrorBody{Error: info})
}
