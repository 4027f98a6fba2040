package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/client"
)

// Logs prints the stderr lines kept for the stdio server name (the last
// tail, if tail > 0), or follows them (FollowLogs), to out or as JSON if
// asJSON; of a remote server, which has none, it says so on errOut.
func Logs(ctx context.Context, c *client.Client, out, errOut io.Writer, name string, tail int, follow, asJSON bool) error {
	v, err := c.Server(ctx, name)
	if err != nil {
		return err
	}
	if !v.IsStdio() {
		if asJSON && !follow {
			return JSON(out, api.LogLines{Lines: []string{}})
		}
		fmt.Fprintf(errOut, "%s is a remote server (%s): it has no process, so there are no stderr lines to show; see \"server show %s\" for its state\n", v.Name, v.Transport, v.Name)
		return nil
	}
	if follow {
		return FollowLogs(ctx, c, out, name, tail, asJSON)
	}
	lines, err := c.Logs(ctx, name)
	if err != nil {
		return err
	}
	if tail > 0 && len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	if asJSON {
		return JSON(out, api.LogLines{Lines: lines})
	}
	return Lines(out, lines)
}

// FollowLogs prints a followed log until it ends or ctx does (Ctrl-C,
// which is not an error here).
func FollowLogs(ctx context.Context, c *client.Client, out io.Writer, name string, tail int, asJSON bool) error {
	s, err := c.FollowLogs(ctx, name, tail)
	if err != nil {
		return err
	}
	defer s.Close()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return Stream(ctx, s.Next, nil, func(rec client.LogRecord) error {
		if !asJSON {
			_, err := io.WriteString(out, logRecordLine(rec)+"\n")
			return err
		}
		if rec.Event != nil {
			return enc.Encode(map[string]any{"event": rec.Event})
		}
		return enc.Encode(rec.Line)
	})
}

// logRecordLine renders one record of a followed log: a line read
// before the stream began as it is, a new line after the time it was
// read, a state change as a marker line.
func logRecordLine(rec client.LogRecord) string {
	if ev := rec.Event; ev != nil {
		return formatStamp(ev.At) + " --- " + describeEvent(ev)
	}
	if rec.Line.At == nil {
		return rec.Line.Line
	}
	return formatStamp(*rec.Line.At) + " " + rec.Line.Line
}

// formatStamp prints a time of a log or an event line, local, to the
// millisecond.
func formatStamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") }

// Events prints the status events of the servers named (every
// server if none) until the stream ends or ctx does (Ctrl-C, not an
// error here).
func Events(ctx context.Context, c *client.Client, out io.Writer, names []string, asJSON bool) error {
	s, err := c.Events(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return Stream(ctx, s.Next, errors.New("the daemon ended the event stream (did it stop?)"), func(ev sb.Event) error {
		if len(names) > 0 && !slices.Contains(names, ev.Server) {
			return nil
		}
		if asJSON {
			return enc.Encode(ev)
		}
		_, err := fmt.Fprintf(out, "%s %s %s\n", formatStamp(ev.At), ev.Server, describeEvent(&ev))
		return err
	})
}

// describeEvent reads "attempt_failed (attempt 1, status connecting):
// spawn: command_not_found: ./x: command not found".
func describeEvent(ev *sb.Event) string {
	s := string(ev.Reason)
	switch {
	case ev.Reason == sb.ReasonStarting:
		// The event counts the attempts that failed before this one.
		s += fmt.Sprintf(" (attempt %d)", ev.Attempt+1)
	case ev.Reason == sb.ReasonAttemptFailed:
		s += fmt.Sprintf(" (attempt %d, status %s)", ev.Attempt, ev.Status)
	case ev.Status != ev.Previous && ev.Previous != "":
		s += fmt.Sprintf(" (status %s -> %s)", ev.Previous, ev.Status)
	default:
		s += fmt.Sprintf(" (status %s)", ev.Status)
	}
	if e := ev.Error; e != nil && (ev.Reason == sb.ReasonAttemptFailed || ev.Reason == sb.ReasonDropped) {
		s += fmt.Sprintf(": %s: %s: %s", e.Phase, e.Code, e.Message)
	}
	return s
}
