package upstream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestRejectedByTransportIsNoAnswer: the go-sdk's "rejected by transport"
// (its jsonrpc2.ErrRejected, wrapped as its Streamable HTTP client wraps
// it) is not taken for a JSON-RPC error the server answered with; a
// server's error that the go-sdk wraps together with it, in an HTTP error
// answer, still is.
func TestRejectedByTransportIsNoAnswer(t *testing.T) {
	sdkRejected := &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}
	aborted := fmt.Errorf(`calling "tools/call": %w`,
		fmt.Errorf(`sending "tools/call": %w: %w`, sdkRejected, errors.New("context canceled")))
	if _, ok := rpcError(aborted); ok || !rejected(aborted) {
		t.Errorf("rpcError(%v) = an answer, want the go-sdk's own refusal", aborted)
	}
	answer := &jsonrpc.Error{Code: -32602, Message: "unknown tool"}
	refused := fmt.Errorf(`calling "tools/call": %w`,
		fmt.Errorf(`sending "tools/call": %w: %w: %v`, answer, sdkRejected, "Bad Request"))
	if got, ok := rpcError(refused); !ok || got != answer || rejected(refused) {
		t.Errorf("rpcError(%v) = %v, %v, want the server's answer", refused, got, ok)
	}
}
