package upstream

import "encoding/json"

// rawResult receives the result of a call over the go-sdk's HTTP client
// as bytes (capture.go).
type rawResult struct {
	// Result is the result object as the server sent it; nil if the
	// round-tripper left it to the go-sdk.
	Result json.RawMessage
}

// rawOutcome reads what a captured result needs read: whether it is a
// tool error. It is not ok for a result to decode instead: one over max
// bytes (checkResult measures it as it measures every other), or one that
// is not an object (the decoder says what is wrong with it).
func rawOutcome(result []byte, max int) (isError, ok bool) {
	if len(result) > max || len(result) == 0 || result[0] != '{' {
		return false, false
	}
	isError, err := resultIsError(result)
	return isError, err == nil
}
