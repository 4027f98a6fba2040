package testserver_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// runTasks runs the -tasks server on stdio over the requests (one a
// line, ids 1, 2, ...) and returns its answers by id, raw.
func runTasks(t *testing.T, requests ...string) map[int]string {
	t.Helper()
	var in strings.Builder
	for i, r := range requests {
		in.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,` + r + "}\n")
	}
	var out, errOut bytes.Buffer
	if code := testserver.Main([]string{"-tasks", "-name", "tk"}, strings.NewReader(in.String()), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	answers := make(map[int]string)
	for line := range strings.Lines(out.String()) {
		var m struct{ ID int }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		answers[m.ID] = strings.TrimSpace(line)
	}
	return answers
}

// The -tasks server advertises the extension, makes a task only for a
// request that declares it, asks for input through tasks/get and takes
// the answer through tasks/update, counts down its polls, cancels on
// tasks/cancel, and refuses tasks/* without the extension (-32021) and
// an unknown id (-32602).
func TestTasksServer(t *testing.T) {
	const ext = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	got := runTasks(t,
		`"method":"server/discover","params":{}`,
		`"method":"tools/call","params":{"name":"confirm_delete","arguments":{"filename":"f"},`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-1",`+ext+`}`,
		`"method":"tasks/update","params":{"taskId":"task-1","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-1",`+ext+`}`,
		`"method":"tools/call","params":{"name":"slow_compute","arguments":{"polls":2},`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-2",`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-2",`+ext+`}`,
		`"method":"tools/call","params":{"name":"slow_compute","arguments":{"polls":9}}`,
		`"method":"tools/call","params":{"name":"slow_compute","arguments":{"polls":9},`+ext+`}`,
		`"method":"tasks/cancel","params":{"taskId":"task-3",`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-3",`+ext+`}`,
		`"method":"tasks/get","params":{"taskId":"task-3"}`,
		`"method":"tasks/get","params":{"taskId":"task-99",`+ext+`}`,
		`"method":"tasks/list","params":{`+ext+`}`,
	)
	for id, want := range map[int][]string{
		1:  {`"extensions":{"io.modelcontextprotocol/tasks":{}}`, `"supportedVersions":["2026-07-28"]`},
		2:  {`"resultType":"task"`, `"taskId":"task-1"`, `"status":"input_required"`, `"ttlMs":600000`},
		3:  {`"status":"input_required"`, `"inputRequests":{"confirm":{"method":"elicitation/create"`},
		4:  {`"result":{"resultType":"complete"}`},
		5:  {`"status":"completed"`, `"result":{"content":[{"text":"answer: {\"action\":\"accept\",\"content\":{\"confirm\":true}}"`},
		6:  {`"resultType":"task"`, `"taskId":"task-2"`, `"status":"working"`},
		7:  {`"status":"working"`},
		8:  {`"status":"completed"`, `computed`},
		9:  {`"resultType":"complete"`, `"content":[`},
		10: {`"taskId":"task-3"`},
		11: {`"result":{"resultType":"complete"}`},
		12: {`"status":"cancelled"`},
		13: {`"code":-32021`, `"requiredCapabilities"`},
		14: {`"code":-32602`, `unknown task`},
		15: {`"code":-32601`},
	} {
		for _, w := range want {
			if !strings.Contains(got[id], w) {
				t.Errorf("answer %d: %s; want %s", id, got[id], w)
			}
		}
	}
	if strings.Contains(got[9], "taskId") {
		t.Errorf("a call without the extension made a task: %s", got[9])
	}
}

// The -tasks server refuses the flags of the go-sdk server's faults,
// which it does not serve.
func TestTasksServerRefusesOtherFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := testserver.Main([]string{"-tasks", "-roots"}, strings.NewReader(""), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "-roots is not served with -tasks") {
		t.Errorf("exit %d, stderr %s; want 2 naming -roots", code, errOut.String())
	}
}
