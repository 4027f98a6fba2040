package httpapi

import (
	"encoding/json"
	"net/http"

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
func classify(err error) (int, api.ErrorInfo) {
	code := sb.CodeOf(err)
	return Status(code), api.ErrorInfo{Code: code, Message: err.Error(), Phase: sb.PhaseOf(err), Fields: fieldErrors(err)}
}

// Status is the HTTP status the API answers a failure of code with.
func Status(code sb.Code) int {
	switch code {
	case sb.CodeBadRequest, sb.CodeInvalidConfig, sb.CodeBadAddress, sb.CodeInvalidArguments, sb.CodeInvalidOptions:
		return http.StatusBadRequest
	case sb.CodeUnauthorized:
		return http.StatusUnauthorized
	case sb.CodeForbiddenHost, sb.CodeForbiddenOrigin:
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
	case sb.CodeConnectionLost, sb.CodeResultTooLarge, sb.CodeServerError, sb.CodeToolError:
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
	status, info := classify(err)
	if status >= 500 && status != http.StatusServiceUnavailable {
		a.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "code", info.Code, "error", info.Message)
	}
	writeJSON(w, status, api.ErrorBody{Error: info})
}
