// Command portholder is the tests' other user on the daemon's port: it
// listens on 127.0.0.1 (any port), prints "listening ADDR", then prints
// "request METHOD PATH AUTHORIZATION" for every request it is sent, and
// answers each 503. It runs until killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	var mu sync.Mutex
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fmt.Printf("request %s %s %q\n", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "not switchboard", http.StatusServiceUnavailable)
	}))
}
