package proc

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Poller waits for many children to exit and drains many pipes with one
// goroutine and one epoll set, instead of a goroutine for each.
//
// A daemon with a thousand idle stdio servers would otherwise keep, for
// each, a goroutine blocked in exec.Cmd.Wait (a waitid system call, so an
// OS thread of its own: a thousand threads) and a goroutine copying the
// server's stderr. The Poller watches each child through a pidfd, which
// becomes readable when the child exits, and each pipe through its read
// end; its goroutine runs only while something is watched, so an idle
// Poller holds no goroutine and no file descriptor.
//
// The zero value is ready to use. Callbacks run on the Poller's goroutine:
// they must not block, and may call the Poller.
type Poller struct {
	mu      sync.Mutex
	epfd    int  // the epoll set; valid while running
	running bool // the loop goroutine is started and owns epfd
	// watches holds what is in the set; only the loop removes entries,
	// and it ends when none is left.
	watches map[int32]*watch // by the watched descriptor
}

// watch is one watched descriptor: a child's pidfd (onExit set) or a
// pipe's read end (w set).
type watch struct {
	fd     int
	onExit func()
	w      io.Writer
	onEOF  func()
}

// readBuffer is what one read of a pipe takes; the Poller's goroutine owns
// one, whatever the number of pipes.
const readBuffer = 4096

// readsPerEvent bounds the reads of one pipe per wakeup, so that a chatty
// pipe does not starve the others; what is left is read on the next
// wakeup (the pipe is watched again at once).
const readsPerEvent = 16

// OnExit calls onExit once the child pid has exited. The child is left
// unreaped for onExit to reap (exec.Cmd.Wait then returns at once), so pid
// must be a child of this process that nothing else waits for.
//
// Where pidfds or epoll are unavailable (Linux before 5.3) it falls back
// to a goroutine that waits for the exit without reaping.
func (p *Poller) OnExit(pid int, onExit func()) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		if err = p.add(&watch{fd: pidfd, onExit: onExit}); err != nil {
			unix.Close(pidfd)
		}
	}
	if err != nil {
		go func() {
			var info unix.Siginfo
			for {
				err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
				if !errors.Is(err, unix.EINTR) {
					break
				}
			}
			onExit()
		}()
	}
}

// Drain reads the pipe whose read end is fd until every writer has closed
// it, passing what it reads to w, then closes fd and calls onEOF. fd must
// be non-blocking and is Drain's from then on: not registered with the Go
// runtime's poller (so not from os.Pipe), not read by anyone else. If the
// pipe cannot be watched, Drain copies it on a goroutine instead.
func (p *Poller) Drain(fd int, w io.Writer, onEOF func()) {
	if err := p.add(&watch{fd: fd, w: w, onEOF: onEOF}); err != nil {
		r := os.NewFile(uintptr(fd), "pipe")
		go func() {
			defer onEOF()
			defer r.Close()
			io.CopyBuffer(w, struct{ io.Reader }{r}, make([]byte, readBuffer))
		}()
	}
}

// add registers wt, starting the loop if it is not running. The loop is
// started only once wt is in the set: a loop blocked on an empty set
// would never wake to end.
func (p *Poller) add(wt *watch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	epfd := p.epfd
	if !p.running {
		var err error
		if epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
			return err
		}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wt.fd)}
	if wt.onExit == nil {
		ev.Events |= unix.EPOLLONESHOT // a pipe: see loop
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wt.fd, &ev); err != nil {
		if !p.running {
			unix.Close(epfd)
		}
		return err
	}
	if p.watches == nil {
		p.watches = make(map[int32]*watch)
	}
	p.watches[int32(wt.fd)] = wt
	if !p.running {
		p.epfd, p.running = epfd, true
		go p.loop(epfd)
	}
	return nil
}

// loop waits on epfd until nothing is left to watch, then closes it.
//
// A pipe is watched one event at a time (EPOLLONESHOT): once drained it
// rests for pipeRest before it is watched again, so that a server that
// writes a line to stderr on every call, a thousand times a second, wakes
// the loop a hundred times a second rather than a thousand, each time to
// read what gathered. A pipe left unread after readsPerEvent reads is
// watched again at once: the rest never slows a writer the pipe's buffer
// could not hold. When a child exits, every resting pipe is watched again
// at once, so that its stderr's last lines and end are not a rest late.
func (p *Poller) loop(epfd int) {
	events := make([]unix.EpollEvent, 128)
	buf := make([]byte, readBuffer)
	var resting []rested // drained pipes, in the order their rest ends
	for {
		n, err := unix.EpollWait(epfd, events, restTimeout(resting))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// Only a bad epfd or events buffer fails epoll_wait: a bug here.
			panic("proc: epoll_wait: " + err.Error())
		}
		now := time.Now()
		for len(resting) > 0 && !now.Before(resting[0].until) {
			rearm(epfd, resting[0].fd)
			resting = resting[1:]
		}
		var done []func()
		exited := false
		p.mu.Lock()
		for _, ev := range events[:n] {
			wt := p.watches[ev.Fd]
			if wt == nil {
				continue
			}
			p.mu.Unlock()
			state := pipeEnded
			if wt.onExit == nil {
				state = wt.drain(buf)
			} else {
				exited = true
			}
			p.mu.Lock()
			switch state {
			case pipeEnded:
				rawSyscall(unix.SYS_EPOLL_CTL, uintptr(epfd), unix.EPOLL_CTL_DEL, uintptr(wt.fd))
				rawSyscall(unix.SYS_CLOSE, uintptr(wt.fd), 0, 0)
				delete(p.watches, ev.Fd)
				done = append(done, wt.finish)
			case pipeEmpty:
				resting = append(resting, rested{fd: wt.fd, until: now.Add(pipeRest)})
			case pipeMore:
				rearm(epfd, wt.fd)
			}
		}
		if exited {
			// The child's stderr may be resting: its last words, and its
			// end, are read at once, not a rest later.
			for _, r := range resting {
				rearm(epfd, r.fd)
			}
			resting = resting[:0]
		}
		last := len(p.watches) == 0
		if last {
			p.running = false
			unix.Close(epfd)
		}
		p.mu.Unlock()
		for _, f := range done {
			f()
		}
		if last {
			return
		}
	}
}

// pipeRest is how long a drained pipe rests before it is watched again;
// what its writer writes meanwhile waits in the pipe's buffer. A variable
// for the tests.
var pipeRest = 10 * time.Millisecond

// rested is a drained pipe and when its rest ends.
type rested struct {
	fd    int
	until time.Time
}

// restTimeout is epoll_wait's timeout: until the first rest ends (rounded
// up to the next millisecond), or none.
func restTimeout(r []rested) int {
	if len(r) == 0 {
		return -1
	}
	d := time.Until(r[0].until)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// rearm watches the pipe fd for its next event.
func rearm(epfd, fd int) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(fd)}
	unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), unix.EPOLL_CTL_MOD, uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
}

// What a drain of a pipe left.
const (
	pipeEmpty = iota // all read; the writers may write more
	pipeMore         // readsPerEvent reads, and more to read
	pipeEnded        // every writer closed it, or reading it failed
)

// drain reads what the pipe holds into w, up to readsPerEvent reads.
func (wt *watch) drain(buf []byte) int {
	for range readsPerEvent {
		n, err := rawSyscall(unix.SYS_READ, uintptr(wt.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		switch {
		case n > 0:
			wt.w.Write(buf[:n])
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return pipeEmpty
		default: // EOF, or an error that ends the pipe
			return pipeEnded
		}
	}
	return pipeMore
}

// rawSyscall makes a system call that cannot block (a read of a
// non-blocking pipe, a close, an epoll_ctl) without the scheduler's
// bookkeeping. Through unix.Syscall each could hand the Poller's P to
// another goroutine and queue the Poller behind every runnable one to
// get it back: with a thousand servers stopping at once, on two cores,
// that made exits seconds late and ran stops into their SIGKILL grace.
func rawSyscall(trap, a1, a2, a3 uintptr) (int, unix.Errno) {
	r, _, errno := unix.RawSyscall(trap, a1, a2, a3)
	return int(r), errno
}

// finish calls the watch's callback once its descriptor is closed.
func (wt *watch) finish() {
	if wt.onExit != nil {
		wt.onExit()
		return
	}
	wt.onEOF()
}
