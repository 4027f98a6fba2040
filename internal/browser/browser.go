// Package browser opens a browser on a link that is a secret (web's one-time
// login code, server auth's authorization URL with its state) without
// putting the link on a command line: every user of the host can read
// every process's argv (/proc/PID/cmdline), and the first to redeem the
// code or complete the flow wins. The opener is given a file instead, in
// a directory only this user can enter, holding a page that sends the
// browser on to the link (as Jupyter does); the file goes once the
// browser has had time to read it.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/fileowner"
)

// How long the redirect page is kept: pageKeep after the opener returned
// (an opener that hands the file to a browser already running returns at
// once, and the browser reads the file a moment later), and at most
// pageMaxKeep in all (an opener that is the browser itself returns only
// when the browser ends).
const (
	pageKeep    = 3 * time.Second
	pageMaxKeep = 30 * time.Second
)

// Page is a redirect page handed to the desktop's opener.
type Page struct {
	dir      string
	started  time.Time
	exited   chan struct{} // closed when the opener has returned, at exitedAt
	exitedAt time.Time
}

// Open writes a page that redirects to link into a new private
// directory and hands the page's path to the desktop's opener, without
// waiting for the browser. The caller calls Remove once it no longer
// needs the browser to be able to load the page (it waits for that).
func Open(link string) (*Page, error) {
	name, args, err := opener()
	if err != nil {
		return nil, err
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	p := &Page{exited: make(chan struct{})}
	page, err := p.write(link)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, append(args, page)...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	p.started = time.Now()
	go func() {
		cmd.Wait()
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	return p, nil
}

// opener returns the desktop's program that opens a file in the browser,
// and its arguments before the file.
func opener() (name string, args []string, err error) {
	switch runtime.GOOS {
	case "darwin":
		return "open", nil, nil
	case "windows":
		return "rundll32", []string{"url.dll,FileProtocolHandler"}, nil
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return "", nil, fmt.Errorf("no desktop: neither DISPLAY nor WAYLAND_DISPLAY is set")
	}
	return "xdg-open", nil, nil
}

// write creates p's directory (mode 0700) in $XDG_RUNTIME_DIR when it is
// this user's private directory, else in the temporary directory, and the
// page in it (0600), and returns the page's path.
func (p *Page) write(link string) (string, error) {
	parent := os.Getenv("XDG_RUNTIME_DIR")
	if parent == "" || fileowner.CheckPrivateDir(parent) != nil {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "switchboard-open-") // mode 0700
	if err != nil {
		return "", fmt.Errorf("writing the page that opens the link: %w", err)
	}
	p.dir = dir
	path := filepath.Join(dir, "open.html")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.WriteString(redirectPage(link))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("writing the page that opens the link: %w", err)
	}
	return path, nil
}

// redirectPage is an HTML page that sends the browser to link at once: a
// meta refresh, a script for browsers that ignore it on a file, and a
// link for a person.
func redirectPage(link string) string {
	js, _ := json.Marshal(link) // escapes <, > and &: safe in a script
	h := html.EscapeString(link)
	return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="0;url=` + h + `">
<title>Switchboard</title>
<script>window.location.replace(` + string(js) + `);</script>
</head><body><p><a href="` + h + `">Continue to Switchboard</a></p></body></html>
`
}

// Remove deletes the page and its directory, after waiting until the
// opener returned and pageKeep passed, or pageMaxKeep since the start,
// or ctx ends. Nil p does nothing.
func (p *Page) Remove(ctx context.Context) {
	if p == nil {
		return
	}
	defer os.RemoveAll(p.dir)
	limit := time.NewTimer(time.Until(p.started.Add(pageMaxKeep)))
	defer limit.Stop()
	select {
	case <-p.exited:
	case <-limit.C:
		return
	case <-ctx.Done():
		return
	}
	keep := time.NewTimer(time.Until(p.exitedAt.Add(pageKeep)))
	defer keep.Stop()
	select {
	case <-keep.C:
	case <-limit.C:
	case <-ctx.Done():
	}
}
