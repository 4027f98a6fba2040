package upstream

import (
	"bytes"
	"sync"
)

// Bounds of a session's stderr log. A chatty server must not grow
// Switchboard's memory: old lines are dropped, long lines are cut.
const (
	DefaultLogLines   = 500
	maxLogLineBytes   = 4096
	truncatedLineMark = " …[truncated]"
)

// LogBuffer keeps the last lines written to it. It is an io.Writer that
// splits its input on newlines; a partial last line is held until its
// newline arrives. It is safe for concurrent use.
type LogBuffer struct {
	mu      sync.Mutex
	max     int      // lines kept
	lines   []string // ring of at most max entries, grown as lines arrive
	next    int      // index of the oldest line once the ring is full
	partial []byte
	cut     bool                // the partial line exceeded maxLogLineBytes
	redact  func(string) string // applied to each line as it is kept; nil = none
}

// NewLogBuffer returns a buffer keeping the last n lines (DefaultLogLines if
// n <= 0).
func NewLogBuffer(n int) *LogBuffer {
	if n <= 0 {
		n = DefaultLogLines
	}
	return &LogBuffer{max: n}
}

// Write adds p, splitting it into lines. It never fails.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.appendPartial(p)
			break
		}
		b.appendPartial(p[:i])
		b.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// Flush records a pending partial line, for when the writer side closes.
func (b *LogBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.partial) > 0 || b.cut {
		b.endLine()
	}
}

func (b *LogBuffer) appendPartial(p []byte) {
	if room := maxLogLineBytes - len(b.partial); len(p) > room {
		p, b.cut = p[:room], true
	}
	b.partial = append(b.partial, p...)
}

func (b *LogBuffer) endLine() {
	line := string(bytes.TrimRight(b.partial, "\r"))
	if b.cut {
		line += truncatedLineMark
	}
	b.partial, b.cut = b.partial[:0], false
	if b.redact != nil {
		line = b.redact(line)
	}
	if len(b.lines) < b.max {
		b.lines = append(b.lines, line)
		return
	}
	b.lines[b.next] = line
	b.next = (b.next + 1) % len(b.lines)
}

// Lines returns the kept lines, oldest first.
func (b *LogBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.lines))
	out = append(out, b.lines[b.next:]...)
	return append(out, b.lines[:b.next]...)
}

// Tail returns the last n lines, oldest first.
func (b *LogBuffer) Tail(n int) []string {
	l := b.Lines()
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}
