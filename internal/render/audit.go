package render

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/switchboard-mcp/switchboard/api"
)

// AuditEntry prints one entry of the audit log: a JSON object on a line
// if asJSON, else a line of text (time, principal, surface, outcome,
// duration, what, sizes).
func AuditEntry(w io.Writer, e api.AuditEntry, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	surface := e.Surface
	if e.Toolset != "" {
		surface += ":" + e.Toolset
	}
	what := e.Server + "/" + e.Tool
	switch e.Kind {
	case "resource":
		what = e.Server + " " + e.Resource
	case "prompt":
		what = e.Server + " prompt " + e.Prompt
	case "task":
		what = e.Server + " " + e.Task
	case "api":
		what = e.Request
	}
	d := time.Duration(e.DurationMS * float64(time.Millisecond)).Round(10 * time.Microsecond)
	_, err := fmt.Fprintf(w, "%s  %-10s %-11s %-12s %9s  %s  %dB>%dB\n", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Principal,
		surface, e.Outcome, d, what, e.RequestBytes, e.ResultBytes)
	return err
}
