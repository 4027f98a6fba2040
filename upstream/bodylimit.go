package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file bounds what a remote server can make Switchboard hold. The
// go-sdk reads a JSON answer whole (io.ReadAll), whatever its size, and
// its Streamable HTTP client buffers server-sent events without a cap; a
// server answering with 300 MB took the daemon from 27 MB to 2.26 GB. So
// every answer is read here first, one message at a time (a JSON body, or
// one event of a stream), into at most limit bytes: MaxResultBytes plus
// frameOverhead for the envelope, the bound stdio puts on one line. A
// message within it is passed on whole; the go-sdk then holds it as it
// always did.
//
// A message over it is never held: what arrived is dropped and the rest
// discarded as it comes. The go-sdk cannot be told that an answer was
// dropped (a read error on a Streamable HTTP answer ends the whole session,
// and on legacy SSE the one stream that carries everything), so the
// message is replaced by one it understands:
//
//   - An answer to a request (a response) becomes a JSON-RPC error response
//     with the same id, which fails that request, and only it, naming the
//     limit (tooLargeResponse; the call turns it into ErrResultTooLarge).
//     The id is the POST's own request's for a POST's answer; on a stream it
//     is read from the message's first bytes (the go-sdk and Python SDKs
//     write it before the result) or its last ones (the TypeScript SDK
//     writes it after).
//   - A server request or notification over the limit is dropped, with a
//     warning. Nothing waits for a notification; a request goes unanswered.
//   - On a legacy SSE stream, a message that cannot be told apart (neither
//     its first nor its last bytes say) ends the connection, as an
//     oversized line does over stdio: it may have been the answer that a
//     call waits for. On a Streamable HTTP stream of its own (a GET), it is
//     dropped: answers to calls come in the calls' POSTs.

const (
	// peekHead and peekTail are how much of an oversized message is kept
	// to tell what it is: its first bytes (to parse) and its last ones (to
	// match).
	peekHead = 4 << 10
	peekTail = 512

	// blockSize is the unit a message is held in. Blocks are never grown
	// by copying, so holding a message allocates its size, not a multiple.
	blockSize      = 64 << 10
	firstBlockSize = 4 << 10 // most messages are small

	// codeTooLarge is the JSON-RPC error code of the response that replaces
	// an oversized one. It is in the range JSON-RPC leaves to
	// implementations; tooLargeMarker in its data tells it from a server's
	// own error of the same code.
	codeTooLarge   = -32099
	tooLargeMarker = "switchboard/result_too_large"
)

// tooLargeData is the data of a codeTooLarge error.
type tooLargeData struct {
	Marker string `json:"switchboard"`
	Limit  int    `json:"limit"`
}

// tooLargeResponse returns the response that replaces an oversized answer
// to request id.
func tooLargeResponse(id json.RawMessage, limit int) []byte {
	data, _ := json.Marshal(tooLargeData{Marker: tooLargeMarker, Limit: limit})
	msg, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: codeTooLarge, Data: data,
		Message: fmt.Sprintf("the server's answer is over the %d-byte limit on one message and was discarded unread", limit)}})
	return msg
}

// asTooLarge reports whether err is the go-sdk's report of a
// tooLargeResponse, and the limit it names.
func asTooLarge(err error) (limit int, ok bool) {
	we, ok := rpcError(err)
	if !ok || we.Code != codeTooLarge {
		return 0, false
	}
	var d tooLargeData
	if json.Unmarshal(we.Data, &d) != nil || d.Marker != tooLargeMarker {
		return 0, false
	}
	return d.Limit, true
}

// msgKind is what an oversized message is, as far as its ends tell.
type msgKind int

const (
	kindUnknown  msgKind = iota
	kindResponse         // "result" or "error": an answer to a request
	kindRequest          // "method" or "params": a server request or a notification
)

// peek reads what it can of a JSON-RPC message from its first bytes: its
// kind, and its id if it comes before any nested value. It stops at the
// first nested value (the result, the params), whose end is out of reach.
func peek(head []byte) (kind msgKind, id json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown, nil
	}
	for range 16 { // a JSON-RPC message has at most 4 members; a few more are ignored
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return kind, id
		}
		switch key {
		case "result", "error":
			kind = kindResponse
		case "method", "params":
			kind = kindRequest
		}
		v, err := dec.Token()
		if err != nil {
			return kind, id
		}
		switch v := v.(type) {
		case json.Delim:
			return kind, id
		case json.Number:
			if key == "id" {
				id = json.RawMessage(v)
			}
		case string:
			if key == "id" {
				id, _ = json.Marshal(v)
			}
		}
	}
	return kind, id
}

// tailID matches an id that is the last member of a message, as the
// TypeScript SDK writes its responses: {"result":{...},"jsonrpc":"2.0","id":5}.
// The closing brace must end the message: a nested object's "id" is
// followed by two.
var tailID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*\}\s*$`)

// idFromTail returns the id at the end of a message's last bytes, if any.
func idFromTail(tail []byte) json.RawMessage {
	if m := tailID.FindSubmatch(tail); m != nil {
		return json.RawMessage(bytes.Clone(m[1]))
	}
	return nil
}

// blocks holds bytes in fixed-size blocks and hands them out in order.
type blocks struct {
	list [][]byte
	n    int // bytes held
}

func (b *blocks) write(p []byte) {
	for len(p) > 0 {
		if len(b.list) == 0 || len(b.list[len(b.list)-1]) == cap(b.list[len(b.list)-1]) {
			size := blockSize
			if len(b.list) == 0 {
				size = firstBlockSize
			}
			b.list = append(b.list, make([]byte, 0, size))
		}
		last := &b.list[len(b.list)-1]
		n := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:n]...)
		b.n += n
		p = p[n:]
	}
}

// read moves held bytes into p, releasing each block once it is read.
func (b *blocks) read(p []byte) int {
	done := 0
	for done < len(p) && len(b.list) > 0 {
		n := copy(p[done:], b.list[0])
		b.list[0] = b.list[0][n:]
		if len(b.list[0]) == 0 {
			b.list[0] = nil
			b.list = b.list[1:]
		}
		done += n
		b.n -= n
	}
	return done
}

// head returns a copy of at most n of the first bytes held.
func (b *blocks) head(n int) []byte {
	var out []byte
	for _, blk := range b.list {
		if len(out) >= n {
			break
		}
		out = append(out, blk[:min(len(blk), n-len(out))]...)
	}
	return out
}

// all returns the bytes held: the one block itself if there is one
// (most messages), else a copy.
func (b *blocks) all() []byte {
	if len(b.list) == 1 {
		return b.list[0]
	}
	return b.head(b.n)
}

func (b *blocks) reset() { *b = blocks{} }

// tailBuf keeps the last peekTail bytes written to it.
type tailBuf struct{ b []byte }

func (t *tailBuf) write(p []byte) {
	if len(p) >= peekTail {
		t.b = append(t.b[:0], p[len(p)-peekTail:]...)
		return
	}
	if over := len(t.b) + len(p) - peekTail; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
}

// bodyLimit is what the round-tripper needs to bound one response.
type bodyLimit struct {
	limit int
	log   *slog.Logger
	// requestID returns the id of the request a POST carried, if any.
	requestID func() json.RawMessage
	// post: the response is a POST's (its answer, or the stream of its
	// answer); else a stream of its own (a GET).
	post bool
	// onUnknown, if set, is called when a stream of its own carries an
	// oversized message that cannot be told apart, and the stream is then
	// ended with an error (legacy SSE); if nil, such a message is dropped.
	onUnknown func()
	// take, if set, sees every message within the limit (its data) before
	// it is handed out, and may give the one to hand out instead
	// (capture.go).
	take func(msg []byte) (standIn []byte, ok bool)
}

// errTooLarge ends a body that could not be replaced by an answer.
var errTooLarge = errors.New("the server's answer is over the size limit on one message")

// boundedJSON is the body of a POST's answer that is not a stream: one
// message. It is read whole, up to the limit, at the first Read (which the
// go-sdk makes in a goroutine of its own, not in the request's), and then
// handed out; over the limit, it is replaced by a tooLargeResponse to the
// POST's request.
type boundedJSON struct {
	r       io.ReadCloser
	size    int64 // Content-Length, or -1
	lim     bodyLimit
	started bool
	held    blocks
	err     error // returned once held is drained
}

func newBoundedJSON(r io.ReadCloser, contentLength int64, lim bodyLimit) *boundedJSON {
	return &boundedJSON{r: r, size: contentLength, lim: lim}
}

func (b *boundedJSON) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.fill()
	}
	if n := b.held.read(p); n > 0 || len(p) == 0 {
		return n, nil
	}
	return 0, b.err
}

func (b *boundedJSON) Close() error { return b.r.Close() }

func (b *boundedJSON) fill() {
	if b.size > int64(b.lim.limit) {
		b.oversized(b.size) // announced: not a byte need be read
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := b.r.Read(buf)
		b.held.write(buf[:n])
		if b.held.n > b.lim.limit {
			b.oversized(-1)
			return
		}
		if err != nil {
			b.err = err
			if err == io.EOF && b.lim.take != nil {
				if standIn, ok := b.lim.take(b.held.all()); ok {
					b.held.reset()
					b.held.write(standIn)
				}
			}
			return
		}
	}
}

func (b *boundedJSON) oversized(size int64) {
	b.held.reset()
	b.r.Close() // the rest is not wanted: closing beats reading it
	b.err = io.EOF
	id := b.lim.requestID()
	b.lim.log.Warn("discarded an answer over the size limit", "limit", b.lim.limit, "content_length", size)
	if id == nil {
		b.err = errTooLarge
		return
	}
	b.held.write(tooLargeResponse(id, b.lim.limit))
}

// boundedEvents passes a server-sent event stream through one event at a
// time: each is held until its blank line, up to the limit, then handed
// out. An event over the limit is dropped as it arrives and replaced as
// the file's comment says.
type boundedEvents struct {
	r   io.ReadCloser
	lim bodyLimit

	event    blocks // the current event, while within the limit
	ready    blocks // whole events, to hand out
	err      error  // from the stream, returned once ready is drained
	ended    bool   // the stream is over for the reader (err is set)
	atLine   bool   // the last byte seen ended a line
	crLine   bool   // the current line is a lone "\r" so far
	dataLine bool   // the current line is a data line

	// While an oversized event is discarded:
	over     bool
	overHead []byte // its first data, to peek at
	overTail tailBuf
	answered bool // its replacement has been handed out already
}

func newBoundedEvents(r io.ReadCloser, lim bodyLimit) *boundedEvents {
	return &boundedEvents{r: r, lim: lim, atLine: true}
}

func (e *boundedEvents) Close() error { return e.r.Close() }

func (e *boundedEvents) Read(p []byte) (int, error) {
	// Bounded by the stream: every pass reads from it, and it ends.
	for {
		if n := e.ready.read(p); n > 0 || len(p) == 0 {
			return n, nil
		}
		if e.ended {
			return 0, e.err
		}
		// The stream is read into p itself: scan copies what it keeps,
		// and an idle stream (the standalone GET of every remote session)
		// holds no read buffer of its own while it waits.
		n, err := e.r.Read(p)
		e.scan(p[:n])
		if err != nil && !e.ended {
			if e.over {
				e.finishOversized()
			} else {
				e.flushEvent() // the last event, without its blank line
			}
			e.ended, e.err = true, cmpErr(e.err, err)
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// scan splits b into lines and events. An event ends with a blank line:
// "\n" or "\r\n" at the start of a line, its "\r" perhaps in an earlier read.
func (e *boundedEvents) scan(b []byte) {
	for len(b) > 0 && !e.ended {
		seg := b
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			seg = b[:i+1]
		}
		b = b[len(seg):]
		if e.atLine {
			// What a line is shows at its start; a line cut within
			// "data:" by the read counts as data, which only widens the
			// tail kept of an oversized event.
			e.dataLine = bytes.HasPrefix(seg, []byte("data:")) || len(seg) < len("data:")
		}
		blank := false
		if i >= 0 {
			content := seg[:i]
			blank = e.atLine && (len(content) == 0 || string(content) == "\r") || e.crLine && len(content) == 0
			e.atLine, e.crLine = true, false
		} else {
			e.crLine = e.atLine && string(seg) == "\r"
			e.atLine = false
		}
		if !e.over {
			e.event.write(seg)
			if e.event.n <= e.lim.limit {
				if blank {
					e.flushEvent()
				}
				continue
			}
			e.startOversized()
		}
		if e.dataLine && !blank {
			e.overTail.write(bytes.TrimRight(seg, "\r\n"))
		}
		if blank {
			e.finishOversized()
		}
	}
}

// flushEvent makes the current event ready to hand out.
func (e *boundedEvents) flushEvent() {
	if e.lim.take != nil {
		e.offer()
	}
	for _, blk := range e.event.list {
		e.ready.list = append(e.ready.list, blk)
		e.ready.n += len(blk)
	}
	e.event.reset()
}

// offer shows the current event's data to lim.take, and puts the stand-in
// it may give in the event's place, with the event's other fields. Only a
// message is offered: the go-sdk skips an event of another name, so its
// result is not the one the call returns.
func (e *boundedEvents) offer() {
	raw := e.event.all()
	if !isMessage(raw) {
		return
	}
	standIn, ok := e.lim.take(eventData(raw))
	if !ok {
		return
	}
	e.event.reset()
	for line := range bytes.Lines(raw) {
		if !bytes.HasPrefix(line, []byte("data:")) && len(bytes.TrimRight(line, "\r\n")) > 0 {
			e.event.write(line)
			if line[len(line)-1] != '\n' {
				e.event.write([]byte("\n")) // the stream's last line: the stand-in's data starts a line of its own
			}
		}
	}
	e.event.write([]byte("data: "))
	e.event.write(standIn)
	e.event.write([]byte("\n\n"))
}

// startOversized drops the current event, keeping what tells what it is,
// and answers for it at once if that is enough.
func (e *boundedEvents) startOversized() {
	e.over, e.answered = true, false
	e.overHead = eventData(e.event.head(2 * peekHead))
	e.overTail = tailBuf{}
	e.event.reset()
	kind, id := peek(e.overHead)
	switch {
	case kind == kindRequest:
		// Dropped at its end, whatever the stream.
	case e.lim.post:
		own := e.lim.requestID()
		if kind == kindResponse && id != nil && !bytes.Equal(id, own) {
			e.answer(id) // another request's answer (a resumed stream): carry on
			return
		}
		// A POST's stream ends with its answer: this is it, or nothing
		// tells it apart from it. The rest of the stream is not wanted.
		e.answer(own)
		e.r.Close()
		e.ended, e.err = true, io.EOF
	case kind == kindResponse && id != nil:
		e.answer(id)
	}
}

// finishOversized ends the discarded event: the one answer it may still
// need, from its last bytes, or the end of the stream.
func (e *boundedEvents) finishOversized() {
	e.over = false
	if e.answered || e.ended {
		return
	}
	kind, _ := peek(e.overHead)
	id := idFromTail(e.overTail.b)
	switch {
	case kind == kindResponse && id != nil:
		e.answer(id)
	case kind == kindRequest:
		e.lim.log.Warn("dropped a server request or notification over the size limit", "limit", e.lim.limit)
	case e.lim.onUnknown != nil:
		e.lim.log.Warn("a message over the size limit could not be told apart; ending the connection", "limit", e.lim.limit)
		e.lim.onUnknown()
		e.ended, e.err = true, errTooLarge
	default:
		e.lim.log.Warn("dropped a message over the size limit", "limit", e.lim.limit)
	}
}

// answer hands out the replacement of an oversized answer to request id.
func (e *boundedEvents) answer(id json.RawMessage) {
	e.answered = true
	if id == nil {
		e.ended, e.err = true, errTooLarge
		return
	}
	e.lim.log.Warn("discarded an answer over the size limit", "limit", e.lim.limit)
	e.ready.write([]byte("data: "))
	e.ready.write(tooLargeResponse(id, e.lim.limit))
	e.ready.write([]byte("\n\n"))
}

// eventData returns the data of an event's first lines ("data: x" lines,
// joined by newlines; the other fields left out). The last line may be
// cut short. The data of one line (most events') is part of raw, not a
// copy: a result taken from it (offer) is not copied again.
func eventData(raw []byte) []byte {
	var data []byte
	lines := 0
	for line := range bytes.Lines(raw) {
		line = bytes.TrimRight(line, "\r\n")
		d, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		d = bytes.TrimPrefix(d, []byte(" "))
		switch lines++; lines {
		case 1:
			data = d
		case 2:
			data = append(append(append([]byte(nil), data...), '\n'), d...) // not into raw
		default:
			data = append(append(data, '\n'), d...)
		}
	}
	return data
}

// isMessage reports whether the go-sdk reads the event raw as a message:
// its name, which the last event field gives, trimmed as the go-sdk trims
// it, is "message" or empty.
func isMessage(raw []byte) bool {
	var name []byte
	for line := range bytes.Lines(raw) {
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			name = bytes.TrimSpace(v)
		}
	}
	return len(name) == 0 || string(name) == "message"
}

// cutBody ends a body after limit bytes: the answers nobody parses for
// their content (an error status's page, a page where MCP was expected),
// which the go-sdk still reads whole.
type cutBody struct {
	r    io.ReadCloser
	left int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

func (c *cutBody) Close() error { return c.r.Close() }

// eventSlack is the room the go-sdk's own cap on one event gets beyond
// the round-tripper's, which it must never be the first to reach.
const eventSlack = 64 << 10

// Bounds on what the session keeps of a server's initialize answer for as
// long as it lives: the name and version are shown with every listing of
// the servers, and the instructions are kept with the session.
const (
	maxServerName    = 256
	maxServerVersion = 64
	maxInstructions  = 16 << 10
)

// cutMark ends a string cut by cut.
const cutMark = "…"

// cut returns s cut to at most n bytes, at a UTF-8 boundary, with
// cutMark. The result never shares s's memory: a cut megabyte is freed.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + cutMark
}

// trimInitializeResult cuts what the go-sdk keeps of the server's
// initialize answer, in place, before anyone reads it: the go-sdk reads
// only its protocol version and capabilities afterwards, and
// Session.Info shows the server's name and version.
func trimInitializeResult(r *mcp.InitializeResult) {
	if r == nil {
		return
	}
	r.Instructions = cut(r.Instructions, maxInstructions)
	if r.ServerInfo != nil {
		si := *r.ServerInfo
		si.Name = cut(si.Name, maxServerName)
		si.Title = cut(si.Title, maxServerName)
		si.Version = cut(si.Version, maxServerVersion)
		r.ServerInfo = &si
	}
}
