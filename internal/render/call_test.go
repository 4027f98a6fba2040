package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
)

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &ProgressBar{out: &buf, width: 10, cols: 80}
	for _, tc := range []struct {
		progress, total float64
		msg, want       string
	}{
		{3, 5, "step 3/5", "[=====>    ] 3/5 step 3/5"},
		{0, 5, "", "[          ] 0/5"},
		{5, 5, "", "[==========] 5/5"},
		{7, 5, "over", "[==========] 7/5 over"},
		{0.5, 1, "", "[====>     ] 0.5/1"},
		{42, 0, "no total", "[42] no total"},
	} {
		if got := p.render(tc.progress, tc.total, tc.msg); got != tc.want {
			t.Errorf("render(%v, %v, %q) = %q, want %q", tc.progress, tc.total, tc.msg, got, tc.want)
		}
	}
	p.Draw(1, 2, "a longer message")
	p.Draw(2, 2, "")
	p.Clear()
	want := "\r[====>     ] 1/2 a longer message" +
		"\r[==========] 2/2" + strings.Repeat(" ", 17) + "\r[==========] 2/2" +
		"\r" + strings.Repeat(" ", 16) + "\r"
	if got := buf.String(); got != want {
		t.Errorf("drawn %q,\nwant  %q", got, want)
	}
	narrow := &ProgressBar{out: io.Discard, width: 10, cols: 21}
	if got := narrow.render(1, 2, "a message far too long for the line"); len(got) != 20 {
		t.Errorf("a line on a 21-column terminal is %d long: %q", len(got), got)
	}
}

func TestParseArguments(t *testing.T) {
	for _, ok := range []string{`{}`, ` {"a": [1, 2]} `, ``} {
		if _, err := ParseArguments(ok, ""); err != nil {
			t.Errorf("parseArguments(%q): %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		`[1]`:     "must be a JSON object",
		`"x"`:     "must be a JSON object",
		`null`:    "must be a JSON object",
		`{a: 1}`:  "not valid JSON",
		`{} {}`:   "one JSON object",
		`{"a": 1`: "not valid JSON",
	} {
		if _, err := ParseArguments(in, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseArguments(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestPrintToolResult(t *testing.T) {
	raw := `{"content":[{"type":"text","text":"{\"n\":1}"},{"type":"text","text":"plain"},
		{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"future"}],
		"structuredContent":{"n":1}}`
	var res ToolResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Result(&buf, &res); err != nil {
		t.Fatal(err)
	}
	// The text that is the structured content's JSON is printed indented,
	// in its place, once.
	want := "{\n  \"n\": 1\n}\nplain\n[image image/png, 8 bytes]\n[future content]\n"
	if buf.String() != want {
		t.Errorf("printed %q, want %q", buf.String(), want)
	}
	for raw, want := range map[string]string{
		// Text and structured content that say the same thing: the text.
		`{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}`: "hello\n",
		// No text: the structured content is all there is.
		`{"content":[],"structuredContent":{"n":2}}`:       "{\n  \"n\": 2\n}\n",
		`{"content":[{"type":"text","text":"only text"}]}`: "only text\n",
	} {
		var res ToolResult
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		Result(&buf, &res)
		if buf.String() != want {
			t.Errorf("%s: printed %q, want %q", raw, buf.String(), want)
		}
	}
}

// TestProgressLinesAreThrottled: a line for the first report, then at most
// two a second, with the total and the message when there are.
func TestProgressLinesAreThrottled(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := NewProgressLines(&buf)
	p.now = func() time.Time { return now }
	for i := range 5 {
		p.Print(float64(i+1), 5, fmt.Sprintf("step\t%d", i+1))
		now = now.Add(200 * time.Millisecond)
	}
	p.Print(7, 0, "")
	want := "progress 1/5: step 1\nprogress 4/5: step 4\n"
	if buf.String() != want {
		t.Errorf("printed %q, want %q", buf.String(), want)
	}
	now = now.Add(time.Second)
	p.Print(7, 0, "")
	if !strings.HasSuffix(buf.String(), "progress 7\n") {
		t.Errorf("without a total: %q", buf.String())
	}
}

// TestRunCallInteractive plays a daemon that reports progress, asks for
// input and answers, and checks what a person at a terminal sees and what
// is posted back.
func TestRunCallInteractive(t *testing.T) {
	answered := make(chan sb.ElicitationResponse, 1)
	var gotCall api.CallRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/call":
			if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "bad headers", http.StatusBadRequest)
				return
			}
			json.NewDecoder(r.Body).Decode(&gotCall)
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			fmt.Fprint(w, "event: progress\ndata: {\"progress\":1,\"total\":2,\"message\":\"half\"}\n\n")
			fmt.Fprint(w, `event: elicitation`+"\n"+`data: {"id":"e1","message":"Who?","requested_schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name"]}}`+"\n\n")
			fl.Flush()
			select {
			case a := <-answered:
				b, _ := json.Marshal(a.Content)
				fmt.Fprintf(w, "event: result\ndata: {\"content\":[{\"type\":\"text\",\"text\":%q}]}\n\n", a.Action+" "+string(b))
			case <-r.Context().Done():
			}
		case "/api/v1/elicitations/e1":
			var a sb.ElicitationResponse
			json.NewDecoder(r.Body).Decode(&a)
			answered <- a
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var out, errOut bytes.Buffer
	cio := &CallIO{Out: &out, ErrOut: &errOut, Progress: ProgressModeBar,
		In: bufio.NewReader(strings.NewReader("Ada\nnot a number\n36\n\n"))}
	err = Call(context.Background(), c, cio, "s/t", json.RawMessage(`{}`), client.CallOptions{Timeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("runCall: %v\nstderr: %s", err, errOut.String())
	}
	if gotCall.Tool != "s/t" || gotCall.Options.TimeoutMS != 1500 {
		t.Errorf("posted call %+v", gotCall)
	}
	if want := "accept {\"age\":36,\"name\":\"Ada\"}\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	e := errOut.String()
	line := "[" + strings.Repeat("=", 14) + ">" + strings.Repeat(" ", 15) + "] 1/2 half"
	contains(t, "stderr", e, "\r"+line+"\r"+strings.Repeat(" ", len(line))+"\r", // drawn, then cleared
		"The server asks: Who?", "name (string; required): ", "age (integer): ", "want a whole number", "ok (boolean): ")

	// Without a terminal, elicitations are declined.
	out.Reset()
	errOut.Reset()
	cio = &CallIO{Out: &out, ErrOut: &errOut}
	if err := Call(context.Background(), c, cio, "s/t", nil, client.CallOptions{}); err != nil {
		t.Fatalf("runCall: %v", err)
	}
	if out.String() != "decline null\n" {
		t.Errorf("without a terminal: stdout %q", out.String())
	}
	if strings.Contains(errOut.String(), "\r") {
		t.Errorf("without a terminal a progress bar was drawn: %q", errOut.String())
	}
}

// TestRunCallErrors covers the error event, a tool error and an API error
// before the stream.
func TestRunCallErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.CallRequest
		json.NewDecoder(r.Body).Decode(&req)
		switch req.Tool {
		case "s/err":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: error\ndata: {\"code\":\"timeout\",\"message\":\"too slow\",\"phase\":\"tool_call\"}\n\n")
		case "s/iserror":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: result\ndata: {\"content\":[{\"type\":\"text\",\"text\":\"it broke\"}],\"isError\":true}\n\n")
		case "s/cut":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: progress\ndata: {\"progress\":1}\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"bad_address","message":"nope"}}`)
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for tool, want := range map[string]string{
		"s/err":     "error (timeout, phase tool_call): too slow",
		"s/iserror": "s/iserror: the tool reported an error (isError)",
		"s/cut":     "the connection closed before the call finished",
		"bad":       "bad_address: nope",
	} {
		var out, errOut bytes.Buffer
		err := Call(context.Background(), c, &CallIO{Out: &out, ErrOut: &errOut}, tool, nil, client.CallOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tool, err, want)
		}
		if tool == "s/iserror" && (errOut.String() != "it broke\n" || out.Len() != 0) {
			t.Errorf("isError: stdout %q, stderr %q", out.String(), errOut.String())
		}
	}
}

func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}
