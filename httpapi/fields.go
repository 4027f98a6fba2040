package httpapi

import (
	"errors"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// fieldErrors lists the fields an invalid config failed on, so that a form
// can show each message beside its field; nil for any other error.
func fieldErrors(err error) []api.FieldError {
	var ve *sb.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	out := make([]api.FieldError, len(ve.Fields))
	for i, f := range ve.Fields {
		out[i] = api.FieldError{Field: f.Field, Message: f.Message}
	}
	return out
}
