package upstream

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file keeps Switchboard from serving itself. A remote server whose
// URL is a Switchboard's own /mcp lists that Switchboard's tools, its own
// included, renamed: every list_changed round adds them again (90 tools to
// 498 in 90 seconds, a core busy, 1.2 GB). Two Switchboards that use each
// other's /mcp do the same between them.
//
// Every Switchboard process is an Instance with a random id, and every
// request of a remote session says, in a Switchboard-Via header, which
// instance sent it, followed by the instances that use that one's
// aggregate /mcp (its users, transitively: they are learnt from the Via of
// the requests it serves). An instance refuses a request whose Via names
// it (HTTP 508 Loop Detected; httpapi does it for serve's /mcp), and the
// session that gets the refusal stops with code loop. So:
//
//   - A→A: A's request names A.
//   - A→B→A: B learns from A's requests that A uses it, and names A in its
//     requests; A refuses B's. Longer cycles the same way, once a request
//     has gone round: whichever session of the cycle connects last is
//     refused, and every request (a health probe, a list refresh) carries
//     the Via of the moment, so a cycle closed later is caught by the next
//     request that goes round it.
//
// Users are learnt from the aggregate /mcp only: a Switchboard that uses
// just one server of another (/mcp/NAME) does not get the other's tools,
// and using each other that way is no loop.

// ViaHeader names the Switchboard instances a request comes from: the
// sender first, then the instances that use the sender, comma-separated.
const ViaHeader = "Switchboard-Via"

const (
	// maxVia bounds the ids a request carries, and maxUsers the users an
	// instance remembers; the most recently seen win.
	maxVia   = 16
	maxUsers = 256
	// usersTTL is how long a user is remembered without a request from
	// it. Sessions probe their servers every 30 s by default.
	usersTTL = 10 * time.Minute
)

// Instance is one Switchboard process as other Switchboards see it: an id,
// and the instances that use it. It is safe for concurrent use.
type Instance struct {
	id    string
	now   func() time.Time
	mu    sync.Mutex
	users map[string]time.Time // instance id -> last request seen from it
}

// NewInstance returns an instance with a new random id.
func NewInstance() *Instance {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand)
	return &Instance{id: hex.EncodeToString(b), now: time.Now, users: map[string]time.Time{}}
}

// DefaultInstance is this process's instance: the one every session uses
// unless Options.Instance says otherwise, and the one serve's /mcp checks.
var DefaultInstance = NewInstance()

// ID returns the instance's id.
func (in *Instance) ID() string { return in.id }

// Via returns the ViaHeader value of a request this instance sends.
func (in *Instance) Via() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.expire()
	users := slices.SortedFunc(maps.Keys(in.users), func(a, b string) int {
		return cmp.Or(in.users[b].Compare(in.users[a]), strings.Compare(a, b)) // most recent first
	})
	return strings.Join(append([]string{in.id}, users[:min(len(users), maxVia-1)]...), ", ")
}

// Arrived looks at the ViaHeader values of a request this instance is
// asked to serve. It reports a loop if they name this instance; otherwise,
// with aggregate set (the request is for the aggregate /mcp), it
// remembers the instances they name as users.
func (in *Instance) Arrived(via []string, aggregate bool) (loop bool) {
	ids := parseVia(via)
	if slices.Contains(ids, in.id) {
		return true
	}
	if !aggregate || len(ids) == 0 {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	now := in.now()
	for _, id := range ids {
		in.users[id] = now
	}
	in.expire()
	for len(in.users) > maxUsers { // bounded: one removal per pass
		oldest := ""
		for id, t := range in.users {
			if oldest == "" || t.Before(in.users[oldest]) {
				oldest = id
			}
		}
		delete(in.users, oldest)
	}
	return false
}

// expire forgets users not seen for usersTTL. in.mu is held.
func (in *Instance) expire() {
	cutoff := in.now().Add(-usersTTL)
	maps.DeleteFunc(in.users, func(_ string, t time.Time) bool { return t.Before(cutoff) })
}

// parseVia returns the ids in ViaHeader values, at most maxVia of them;
// what is not an id is skipped.
func parseVia(values []string) []string {
	var ids []string
	for _, v := range values {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); validID(id) {
				ids = append(ids, id)
				if len(ids) == maxVia {
					return ids
				}
			}
		}
	}
	return ids
}

// validID reports whether id looks like an instance id: a few letters
// and digits, nothing a header could be abused with.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
