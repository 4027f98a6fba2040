// Command floorrelay is the floor of the endpoint scenario: the least a
// gateway in its own process can do between an MCP client on Streamable
// HTTP and a server on stdio. It starts one server (its arguments) as its
// child, and answers every POST by writing the body to the child as a line
// and the line that answers it back as the response body: no session, no
// checks, no rewriting, no MCP at all; only the request id is read, to
// pair a response with its request when callers overlap. It serves one
// client session (the server's own), on 127.0.0.1, until killed:
//
//	floorrelay -- testserver
//
// prints "LISTEN http://127.0.0.1:PORT" once it serves. A GET (the
// standalone stream) is refused with 405, which clients take as "no
// stream". The benchmark compares Switchboard's /mcp/{name} with it to
// tell what Switchboard's own work costs from what any relay on this
// machine pays: a second process, an HTTP hop, a pipe hop (BENCHMARKS.md
// §6b).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
)

func main() {
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: floorrelay -- server [args...]")
		os.Exit(2)
	}
	if err := run(flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "floorrelay:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	child := exec.Command(argv[0], argv[1:]...)
	child.Stderr = io.Discard
	in, err := child.StdinPipe()
	if err != nil {
		return err
	}
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	r := &relay{in: in, waiting: map[string]chan []byte{}}
	go r.readReplies(bufio.NewReaderSize(out, 64<<10))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	return http.Serve(ln, r)
}

// relay pairs the child's answers with the POSTs waiting for them.
type relay struct {
	writeMu sync.Mutex
	in      io.Writer

	mu      sync.Mutex
	waiting map[string]chan []byte // by request id, as written
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := requestID(body)
	var reply chan []byte
	if id != "" {
		reply = make(chan []byte, 1)
		r.mu.Lock()
		r.waiting[id] = reply
		r.mu.Unlock()
	}
	r.writeMu.Lock()
	_, err = r.in.Write(append(body, '\n'))
	r.writeMu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	if reply == nil { // a notification: nothing comes back
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case line := <-reply:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "floor")
		w.Write(line)
	case <-req.Context().Done():
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	}
}

// readReplies hands each line the child writes to the request it answers;
// the child's own requests and notifications are dropped (the echo tool
// sends none).
func (r *relay) readReplies(br *bufio.Reader) {
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			os.Exit(0) // the child is gone: so is the relay
		}
		id := requestID(line)
		r.mu.Lock()
		reply := r.waiting[id]
		delete(r.waiting, id)
		r.mu.Unlock()
		if reply != nil {
			reply <- line
		}
	}
}

// requestID returns the "id" member of a message as written, "" if it has
// none. It looks only for the member's name: enough for the JSON the go-sdk
// writes, which is all a floor has to read.
func requestID(msg []byte) string {
	_, rest, ok := bytes.Cut(msg, []byte(`"id":`))
	if !ok {
		return ""
	}
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return ""
	}
	return string(bytes.TrimSpace(rest[:end]))
}
