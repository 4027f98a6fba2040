package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// The relay serves the stateless mode of the 2026-07-28 protocol
// (SEP-2575) too: a tools/call POSTed without a session, whose _meta names
// the protocol version and the client's capabilities. The go-sdk's
// stateless handler makes a session for each such request and checks what
// the request says of itself against its headers; the relay serves only
// the requests that it can tell pass every one of those checks, and leaves
// the others to the go-sdk, which answers them as before:
//
//   - Mcp-Protocol-Version is a version the go-sdk serves statelessly, and
//     _meta names the same one;
//   - Mcp-Method is tools/call and Mcp-Name the tool's name (the standard
//     headers the go-sdk requires of this protocol);
//   - the tool's input schema binds no argument to a header (x-mcp-header),
//     whose value the go-sdk would compare with the argument's;
//   - _meta's client capabilities are plain (roots, experimental,
//     extensions: a client that can be asked for elicitation or sampling is
//     not relayed) and its client info, if any, too; no other member of the
//     protocol's own (a log level) is there.
//
// A stateless request has no downstream session: no client id (a server
// whose session_scope is per-client serves it on its shared session, as on
// the go-sdk path; clients.go), no notifications/cancelled (the call ends
// when its request does). A toolset's endpoint is served alike, for the
// tools the toolset allows at the call. Its result is shaped as the go-sdk
// shapes one of this protocol (statelessResult); a 2026-07-28 upstream's
// request for input is such a result, for the client to answer
// (generation.go), and the client's retry, which carries its answers in
// params, is the go-sdk's path (gateway.call) to serve.

// statelessVersions are the versions the go-sdk serves without a session.
var statelessVersions = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v < "2026-07-28" })

// serveStatelessRelay serves r, a stateless request to m, if it can and
// reports whether it did; if not, r's body is restored for the go-sdk.
func (g *Gateway) serveStatelessRelay(w http.ResponseWriter, r *http.Request, m *mirror) bool {
	version := r.Header.Get("Mcp-Protocol-Version")
	if r.Header.Get("Mcp-Method") != "tools/call" || !slices.Contains(statelessVersions, version) {
		return false
	}
	env, ok := relayRequest(r)
	if !ok || string(env.method) != `"tools/call"` || r.Header.Get("Mcp-Name") != env.name || !env.plainStateless(version) {
		return false
	}
	o, tool, shown := m.relayTool(env.name)
	if !shown || !m.allows(sb.KindTool, o.server, o.name) || paramHeaders(tool.InputSchema) {
		return false
	}
	g.served.Add(1)
	g.relayCall(w, m.auditedRequest(r), nil, env, o, m.info)
	return true
}

// plainStateless reports whether the _meta of a stateless call says no
// more than the relay can serve: version, plain client capabilities and
// info.
func (env *relayEnvelope) plainStateless(version string) bool {
	v, ok := rawjson.String(env.version)
	return ok && v == version && !env.other && env.caps != nil && plainCapabilities(env.caps) &&
		(env.info == nil || plainClientInfo(env.info))
}

// plainCapabilities reports whether the client capabilities v are ones the
// go-sdk reads without error and that ask for no server requests: roots
// (of which only listChanged), experimental and extensions.
func plainCapabilities(v []byte) bool {
	return allMembers(v, func(k, v []byte) bool {
		switch string(k) {
		case "roots":
			return allMembers(v, func(k, v []byte) bool {
				return string(k) == "listChanged" && (string(v) == "true" || string(v) == "false")
			})
		case "experimental", "extensions":
			return v[0] == '{'
		}
		return false
	})
}

// plainClientInfo reports whether the client info v is one the go-sdk
// reads without error: an object of the Implementation's string members.
func plainClientInfo(v []byte) bool {
	return allMembers(v, func(k, v []byte) bool {
		switch string(k) {
		case "name", "title", "description", "version", "websiteUrl":
			return v[0] == '"'
		}
		return false
	})
}

// allMembers reports whether v is an object every member of which
// satisfies fn.
func allMembers(v []byte, fn func(k, v []byte) bool) bool {
	all := true
	return rawjson.Members(v, func(k, v []byte) bool {
		all = fn(k, v)
		return all
	}) == nil && all
}

// paramHeaders reports whether an input schema binds an argument to a
// header (an x-mcp-header annotation, at any depth of properties), as the
// go-sdk finds them; true for a schema it cannot look into. A schema kept
// as JSON (what upstream sessions hold) is decoded only if it may hold
// the annotation.
func paramHeaders(schema any) bool {
	switch s := schema.(type) {
	case nil:
		return false
	case json.RawMessage:
		if !bytes.Contains(s, []byte("x-mcp-header")) && !bytes.Contains(s, []byte(`\u`)) {
			return false
		}
		var m map[string]any
		return json.Unmarshal(s, &m) != nil || paramHeaders(m)
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, p := range props {
			prop, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if h, _ := prop["x-mcp-header"].(string); h != "" || paramHeaders(prop) {
				return true
			}
		}
		return false
	default:
		return true
	}
}

// metaServerInfo is the member of a result's _meta by which the server
// names itself in the 2026-07-28 protocol.
const metaServerInfo = metaPrefix + "serverInfo"

// inputRequiredType is the resultType of a request for input.
var inputRequiredType = []byte(`"input_required"`)

// statelessResult returns the result object, in pieces, as the go-sdk's
// stateless handler sends a result of the 2026-07-28 protocol: with the
// server's own info (the encoded mcp.Implementation info) in _meta, unless
// the result names one there already, and "resultType":"complete" (unless
// it is "input_required", a request for input the upstream sent, or
// "task", a task it made). A
// result without _meta or resultType (the common case) is not copied.
func statelessResult(result, info []byte) ([][]byte, error) {
	plain := true
	err := rawjson.Members(result, func(k, _ []byte) bool {
		plain = bytes.IndexByte(k, '\\') < 0 && string(k) != "_meta" && string(k) != "resultType"
		return plain
	})
	if err == nil && plain {
		body := bytes.TrimSpace(result)
		body = bytes.TrimSpace(body[1 : len(body)-1])
		head := make([]byte, 0, 64+len(info))
		head = append(head, `{"_meta":{"`+metaServerInfo+`":`...)
		head = append(head, info...)
		head = append(head, '}')
		if len(body) > 0 {
			head = append(head, ',')
		}
		return [][]byte{head, body, []byte(`,"resultType":"complete"}`)}, nil
	}
	b, err := reshapeResult(result, info)
	return [][]byte{b}, err
}

// reshapeResult is statelessResult for any result: decoded (keys spelled
// with escapes included) and encoded again.
func reshapeResult(result, info []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	if raw, ok := members["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage)
	}
	if _, ok := meta[metaServerInfo]; !ok {
		meta[metaServerInfo] = info
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	members["_meta"] = b
	// A request for input stays one: it is a 2026-07-28 upstream's, for
	// the client to answer (generation.go); so does a task (tasks.go).
	if rt := members["resultType"]; !bytes.Equal(rt, inputRequiredType) && string(rt) != `"task"` {
		members["resultType"] = json.RawMessage(`"complete"`)
	}
	return json.Marshal(members)
}

// statelessErrorStatus is the HTTP status of a stateless call answered
// with the JSON-RPC error rpcErr (nil: none), as SEP-2575 requires it and
// the go-sdk's handler sends it: 404 for -32601 (method not found), 400
// for -32602 (invalid params), -32022 (unsupported protocol version) and
// -32021 (a client capability the request needs was not declared), 200
// for any other.
func statelessErrorStatus(rpcErr *jsonrpc.Error) int {
	if rpcErr == nil {
		return http.StatusOK
	}
	switch rpcErr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
