package testserver

import (
	"bufio"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runStdio serves one MCP session over newline-delimited JSON on
// stdin/stdout until the client closes stdin or a signal arrives. The SDK
// reads and writes through two filters that give the faults raw control of
// the byte stream: filterStdin can swallow messages and stdoutWriter can
// inject garbage.
func (s *server) runStdio(stdin io.Reader) (code int, reason string) {
	transport := &mcp.IOTransport{
		Reader: s.filterStdin(stdin),
		Writer: &stdoutWriter{s: s, w: s.stdout},
	}
	err := s.mcp.Run(s.ctx, transport)
	if s.ctx.Err() != nil {
		return 0, "signal"
	}
	if err != nil {
		s.logf("session ended: %v", err)
	}
	return 0, "stdin closed"
}

// filterStdin returns a reader that yields the lines of stdin that the fault
// layer lets through (see [server.inspect]). Swallowed lines simply never
// reach the SDK, so it never answers them, while the reading goes on.
func (s *server) filterStdin(stdin io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(stdin, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 && s.inspect(parseWire(line), "") == deliver {
				if _, werr := pw.Write(line); werr != nil {
					return // the SDK closed its end: the session is over
				}
			}
			if err != nil {
				// io.EOF is passed through as is, which the SDK reads as the
				// client closing the session.
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// stdoutWriter serializes the SDK's writes to stdout (one JSON-RPC message
// per Write) and, with -malformed, follows the initialize response with a
// line of invalid JSON.
type stdoutWriter struct {
	s *server
	w io.Writer

	mu            sync.Mutex
	malformedSent bool
}

func (o *stdoutWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.w.Write(p)
	if err != nil || !o.s.opts.Malformed || o.malformedSent {
		return n, err
	}
	if id := o.s.initID.Load(); id != nil && isResponseTo(p, *id) {
		o.malformedSent = true
		o.s.logf("writing a malformed line after the initialize response")
		_, err = io.WriteString(o.w, malformedLine+"\n")
	}
	return n, err
}

// Close does nothing: stdout belongs to the process, not to the session.
func (o *stdoutWriter) Close() error { return nil }
