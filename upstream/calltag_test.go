package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The tagger changes nothing but the server requests a call answers, and
// those only by the call's token in _meta, however the stream is cut.
func TestCallTaggerTagsOnlyServerRequests(t *testing.T) {
	long := strings.Repeat("x", 40<<10)
	in := "event: message\n" +
		`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"1","progress":1}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"q","_meta":{"k":"v"}}}` + "\r\n\n" +
		`data: {"jsonrpc":"2.0","method":"elicitation/create","params":{"message":"a notification is not routed"}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":8,"method":"sampling/createMessage"}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"` + long + ` elicitation/create"}]}}` + "\n\n" +
		"data: not json elicitation/create\n\n"
	for name, r := range map[string]io.Reader{
		"whole":     strings.NewReader(in),
		"byte-wise": iotest.OneByteReader(strings.NewReader(in)),
		"halves":    iotest.HalfReader(strings.NewReader(in)),
	} {
		out, err := io.ReadAll(newCallTagger(io.NopCloser(r), "tok-1"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines := strings.Split(string(out), "\n")
		inLines := strings.Split(in, "\n")
		if len(lines) != len(inLines) {
			t.Fatalf("%s: %d lines out, %d in", name, len(lines), len(inLines))
		}
		tagged := 0
		for i, line := range lines {
			if line == strings.TrimSuffix(inLines[i], "\r") || line == inLines[i] {
				continue
			}
			var msg struct {
				ID     int `json:"id"`
				Params struct {
					Meta map[string]string `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(bytes.TrimPrefix([]byte(line), []byte("data: ")), &msg); err != nil {
				t.Fatalf("%s: line %d changed into %q", name, i, line)
			}
			if msg.Params.Meta[callMetaKey] != "tok-1" {
				t.Errorf("%s: request %d tagged %v", name, msg.ID, msg.Params.Meta)
			}
			if msg.ID == 7 && msg.Params.Meta["k"] != "v" {
				t.Errorf("%s: the request's own _meta was lost: %v", name, msg.Params.Meta)
			}
			tagged++
		}
		if tagged != 2 {
			t.Errorf("%s: %d lines tagged, want the two requests", name, tagged)
		}
	}
}
