package render

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ProgressBar draws a call's progress on one terminal line, redrawn in
// place with "\r":
//
//	[=====>    ] 3/5 step 3/5
//
// With no total it shows the count and message only.
type ProgressBar struct {
	out   io.Writer
	width int // of the bar, between the brackets
	cols  int // of the terminal; lines are cut to fit
	drawn int // runes on the line now, to blank out on the next draw
}

// NewProgressBar returns a bar that draws on out, a terminal. It writes
// its own \r, so it draws beneath the TerminalWriter, and escapes the
// server's messages itself.
func NewProgressBar(out io.Writer) *ProgressBar {
	if t, ok := out.(interface{ Unfiltered() io.Writer }); ok {
		out = t.Unfiltered()
	}
	cols := 80
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 20 {
		cols = n
	}
	return &ProgressBar{out: out, width: 30, cols: cols}
}

// render returns the bar's line for one progress report.
func (p *ProgressBar) render(progress, total float64, message string) string {
	var b strings.Builder
	if total > 0 {
		frac := min(max(progress/total, 0), 1)
		filled := int(frac * float64(p.width))
		b.WriteByte('[')
		switch {
		case filled >= p.width:
			b.WriteString(strings.Repeat("=", p.width))
		case filled > 0:
			b.WriteString(strings.Repeat("=", filled-1) + ">" + strings.Repeat(" ", p.width-filled))
		default:
			b.WriteString(strings.Repeat(" ", p.width))
		}
		fmt.Fprintf(&b, "] %s/%s", formatNumber(progress), formatNumber(total))
	} else {
		fmt.Fprintf(&b, "[%s]", formatNumber(progress))
	}
	if message != "" {
		b.WriteByte(' ')
		b.WriteString(SafeLine(message))
	}
	line := b.String()
	if r := []rune(line); len(r) > p.cols-1 {
		line = string(r[:p.cols-1])
	}
	return line
}

// Draw redraws the line for one progress report.
func (p *ProgressBar) Draw(progress, total float64, message string) {
	line := p.render(progress, total, strings.Join(strings.Fields(message), " "))
	n := utf8.RuneCountInString(line)
	pad := ""
	if n < p.drawn {
		pad = strings.Repeat(" ", p.drawn-n)
	}
	fmt.Fprintf(p.out, "\r%s%s", line, pad)
	if pad != "" {
		fmt.Fprintf(p.out, "\r%s", line)
	}
	p.drawn = n
}

// Clear blanks the line, if anything is drawn, leaving the cursor at its
// start.
func (p *ProgressBar) Clear() {
	if p == nil || p.drawn == 0 {
		return
	}
	fmt.Fprintf(p.out, "\r%s\r", strings.Repeat(" ", p.drawn))
	p.drawn = 0
}

// ProgressLines prints a call's progress as lines, for a log or a pipe:
//
//	progress 3/5: step 3/5
//
// at most two a second (the first at once), so that a server reporting
// progress a thousand times a second does not flood it.
type ProgressLines struct {
	out  io.Writer
	last time.Time
	now  func() time.Time
}

// progressLineInterval is the least time between two progress lines.
const progressLineInterval = 500 * time.Millisecond

func NewProgressLines(out io.Writer) *ProgressLines {
	return &ProgressLines{out: out, now: time.Now}
}

// Print prints one progress report, unless one was printed less than
// progressLineInterval ago.
func (p *ProgressLines) Print(progress, total float64, message string) {
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < progressLineInterval {
		return
	}
	p.last = now
	line := "progress " + formatNumber(progress)
	if total > 0 {
		line += "/" + formatNumber(total)
	}
	if m := strings.Join(strings.Fields(message), " "); m != "" {
		line += ": " + m
	}
	fmt.Fprintln(p.out, line)
}

// formatNumber prints a progress value without a pointless ".000000".
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
