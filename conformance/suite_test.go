package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scenarioTimeout is how long one scenario may run before the suite is
// stopped and the scenario counted as timed out. The suite has no timeout
// of its own for server scenarios (its client waits 60 s per request);
// against the everything-server every scenario takes well under 5 s.
const scenarioTimeout = 20 * time.Second

// outcome is what a scenario came to.
type outcome string

const (
	outcomePass    outcome = "pass"    // no check failed or warned
	outcomeWarn    outcome = "warn"    // a check warned, none failed
	outcomeFail    outcome = "fail"    // a check failed
	outcomeError   outcome = "error"   // the suite wrote no result (it threw)
	outcomeTimeout outcome = "timeout" // stopped after scenarioTimeout
)

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// result is one scenario's result.
type result struct {
	Outcome outcome
	Checks  []check
	Note    string // why it did not pass
}

// results maps a scenario to its result.
type results map[string]*result

// passing returns the scenarios that passed, sorted. A scenario passes when
// none of its checks failed or warned: the suite's own rule for a baseline
// (--expected-failures), the stricter of its two.
func (rs results) passing() []string {
	var out []string
	for name, r := range rs {
		if r.Outcome == outcomePass {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// summary counts the outcomes, as "30 pass, 2 warn, 0 fail of 32".
func (rs results) summary() string {
	n := map[outcome]int{}
	for _, r := range rs {
		n[r.Outcome]++
	}
	s := fmt.Sprintf("%d pass, %d warn, %d fail", n[outcomePass], n[outcomeWarn], n[outcomeFail])
	if n[outcomeError] > 0 {
		s += fmt.Sprintf(", %d error", n[outcomeError])
	}
	if n[outcomeTimeout] > 0 {
		s += fmt.Sprintf(", %d timeout", n[outcomeTimeout])
	}
	return s + fmt.Sprintf(" of %d", len(rs))
}

// envKeep names a directory to keep the suite's results (checks.json of
// every scenario of every run) in, for a closer look.
const envKeep = "SWITCHBOARD_CONFORMANCE_KEEP"

// suite runs the conformance suite's CLI, one release of it, on one set
// of scenarios.
type suite struct {
	node      string        // the node binary to run bin with; "" runs bin itself
	bin       string        // the conformance CLI
	set       []string      // the arguments choosing the scenarios of a whole run
	one       []string      // the arguments added to --scenario NAME
	work      string        // where each run's results go
	scenarios []string      // every server scenario of set, in the suite's order
	timeout   time.Duration // per scenario
}

// suiteSpec says which release of the suite runs which scenarios.
type suiteSpec struct {
	node string   // the node binary to run bin with; "" runs bin itself
	bin  string   // the conformance CLI
	list []string // the arguments of `list` naming the set's scenarios
	set  []string // the arguments of `server` running them
	one  []string // the arguments added to `server --scenario NAME`
}

// newSuite lists the server scenarios of the spec's set.
func newSuite(t *testing.T, spec suiteSpec) *suite {
	t.Helper()
	bin := spec.bin
	out, err := spec.command(append([]string{"list", "--server"}, spec.list...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s list --server %v: %v\n%s", bin, spec.list, err, out)
	}
	// The results go away with the test, unless a directory is given to
	// keep them in.
	work := os.Getenv(envKeep)
	if work == "" {
		work = t.TempDir()
	} else if work, err = os.MkdirTemp(work, "run-"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("keeping the suite's results in %s", work)
	}
	s := &suite{node: spec.node, bin: bin, set: spec.set, one: spec.one, work: work,
		scenarios: parseScenarioList(string(out), "Server scenarios"), timeout: scenarioTimeout}
	if len(s.scenarios) == 0 {
		t.Fatalf("%s list --server listed no scenarios:\n%s", bin, out)
	}
	return s
}

// command runs the suite's CLI with args.
func (spec suiteSpec) command(args ...string) *exec.Cmd {
	if spec.node == "" {
		return exec.Command(spec.bin, args...)
	}
	return exec.Command(spec.node, append([]string{spec.bin}, args...)...)
}

// parseScenarioList reads the scenarios of one section ("Server
// scenarios" or "Client scenarios") from `conformance list`: the
// "  - name" lines under that section's header. A list with no header
// at all is one section.
func parseScenarioList(out, section string) []string {
	var names []string
	in := !strings.Contains(out, " scenarios")
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "- "); ok {
			if in && name != "" {
				names = append(names, name)
			}
			continue
		}
		if strings.HasSuffix(line, "):") || strings.HasSuffix(line, ":") {
			in = strings.HasPrefix(line, section)
		}
	}
	return names
}

// run runs every server scenario against url and returns each one's
// result. The suite runs once, whole (the pending scenarios included); a
// scenario that hangs is stopped after s.timeout, and each one left
// without a result then runs alone.
func (s *suite) run(t *testing.T, label, url string) results {
	t.Helper()
	dir := filepath.Join(s.work, label)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	timedOut := map[string]bool{}
	var logs strings.Builder
	if hung, out := s.exec(t, dir, url, "", s.set...); hung != "" {
		timedOut[hung] = true
		logs.WriteString(out)
	}
	rs := readResults(t, dir)
	// A requirement set's run also runs scenarios it does not score
	// (extensions, pending ones): only the set's own are kept.
	for name := range rs {
		if !slices.Contains(s.scenarios, name) {
			delete(rs, name)
		}
	}
	for _, name := range s.scenarios {
		if rs[name] != nil || timedOut[name] {
			continue
		}
		hung, out := s.exec(t, dir, url, name, append([]string{"--scenario", name}, s.one...)...)
		if hung != "" {
			timedOut[name] = true
		}
		if r := readResults(t, dir)[name]; r != nil {
			rs[name] = r
			continue
		}
		logs.WriteString(out)
		if !timedOut[name] {
			rs[name] = &result{Outcome: outcomeError, Note: "the suite wrote no result: " + lastLines(out, 6)}
		}
	}
	for _, name := range s.scenarios {
		if timedOut[name] && rs[name] == nil {
			rs[name] = &result{Outcome: outcomeTimeout, Note: fmt.Sprintf("no result within %v", s.timeout)}
		}
	}
	t.Logf("%s: %s in %v (%s)", label, rs.summary(), time.Since(start).Round(100*time.Millisecond), url)
	if logs.Len() > 0 {
		t.Logf("%s: suite output of the runs that did not finish:\n%s", label, lastLines(logs.String(), 40))
	}
	return rs
}

// exec runs the suite CLI once with args, writing results under dir. first
// is the scenario it starts with, if known; the suite's progress lines name
// the others. If one scenario runs longer than s.timeout, the suite
// is stopped and that scenario returned as hung. out is what the suite
// printed.
func (s *suite) exec(t *testing.T, dir, url, first string, args ...string) (hung, out string) {
	t.Helper()
	var (
		mu      sync.Mutex
		current = first
		reset   = make(chan struct{}, 1)
	)
	w := &lineWriter{onLine: func(line string) {
		if name, ok := strings.CutPrefix(line, "=== Running scenario: "); ok {
			mu.Lock()
			current = strings.TrimSuffix(name, " ===")
			mu.Unlock()
			select {
			case reset <- struct{}{}:
			default:
			}
		}
	}}
	cmd := suiteSpec{node: s.node, bin: s.bin}.command(append([]string{"server", "--url", url, "-o", dir}, args...)...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	p, err := spawn("conformance suite", cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			// Exit status 1 only says that some scenario failed; the
			// results say which.
			return "", w.String()
		case <-reset:
			timer.Reset(s.timeout)
		case <-timer.C:
			p.stop()
			mu.Lock()
			defer mu.Unlock()
			return current, w.String()
		}
	}
}

// resultDir matches the directories the suite writes results to:
// server-<scenario>-<ISO time with ":" and "." as "-">.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every scenario's checks.json under dir.
func readResults(t *testing.T, dir string) results {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs := results{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		if r := readChecks(t, filepath.Join(dir, e.Name(), "checks.json")); r != nil {
			rs[m[1]] = r
		}
	}
	return rs
}

// readChecks reads one scenario's checks.json, or returns nil if it is
// not there (being written when the suite was stopped).
func readChecks(t *testing.T, path string) *result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var checks []check
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return classify(checks)
}

// classify turns a scenario's checks into its result.
func classify(checks []check) *result {
	r := &result{Outcome: outcomePass, Checks: checks}
	var notes []string
	for _, c := range checks {
		switch c.Status {
		case "FAILURE":
			r.Outcome = outcomeFail
		case "WARNING":
			if r.Outcome == outcomePass {
				r.Outcome = outcomeWarn
			}
		default:
			continue
		}
		notes = append(notes, fmt.Sprintf("%s %s: %s", c.Status, c.ID, c.message()))
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// message is what a check says went wrong.
func (c check) message() string {
	if c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	var d struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(c.Details, &d) == nil && d.Message != "" {
		return d.Message
	}
	return "(no message)"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestReadResults checks the harness's reading of the suite's output on a
// made-up result tree, so that it is tested without node or the suite.
func TestReadResults(t *testing.T) {
	list := "Server scenarios (test against a server):\n  - server-initialize\n  - tools-call-with-logging\n  - tools-call\n\nClient scenarios (test against a client):\n  - initialize\n"
	if got, want := parseScenarioList(list, "Server scenarios"), []string{"server-initialize", "tools-call-with-logging", "tools-call"}; !slices.Equal(got, want) {
		t.Errorf("parseScenarioList = %q, want %q", got, want)
	}
	if got, want := parseScenarioList(list, "Client scenarios"), []string{"initialize"}; !slices.Equal(got, want) {
		t.Errorf("parseScenarioList of the client scenarios = %q, want %q", got, want)
	}

	dir := t.TempDir()
	write := func(name, checks string) {
		t.Helper()
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if checks != "" {
			if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte(checks), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("server-server-initialize-2026-01-02T03-04-05-678Z", `[{"id":"a","status":"SUCCESS"},{"id":"b","status":"INFO"}]`)
	write("server-tools-call-with-logging-2026-01-02T03-04-05-679Z", `[{"id":"c","status":"FAILURE","errorMessage":"No log notifications received"}]`)
	write("server-tools-call-2026-01-02T03-04-05-680Z", `[{"id":"d","status":"WARNING","details":{"message":"no session"}}]`)
	write("server-ping-2026-01-02T03-04-05-681Z", "") // stopped before it wrote
	write("unrelated", `[]`)

	rs := readResults(t, dir)
	want := map[string]outcome{"server-initialize": outcomePass, "tools-call-with-logging": outcomeFail, "tools-call": outcomeWarn}
	if len(rs) != len(want) {
		t.Errorf("read %d results, want %d: %v", len(rs), len(want), rs)
	}
	for name, o := range want {
		if r := rs[name]; r == nil || r.Outcome != o {
			t.Errorf("%s: got %+v, want outcome %s", name, r, o)
		}
	}
	if got := rs["tools-call-with-logging"].Note; got != "FAILURE c: No log notifications received" {
		t.Errorf("failure note = %q", got)
	}
	if got := rs["tools-call"].Note; got != "WARNING d: no session" {
		t.Errorf("warning note = %q", got)
	}
	if got := rs.passing(); !slices.Equal(got, []string{"server-initialize"}) {
		t.Errorf("passing = %q", got)
	}
	if got, want := rs.summary(), "1 pass, 1 warn, 1 fail of 3"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}
