package egress

import (
	"cmp"
	"context"
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
// Every Switchboard process is an Instance with a random id. Every request
// of a remote session names its sender in a Switchboard-Via header, and
// every answer of a Switchboard's /mcp names, in a Switchboard-Reach
// header, that Switchboard and the ones it reaches: those named in the
// answers its own remote sessions get. An instance refuses a request whose
// Via names itself or an instance it reaches (HTTP 508 Loop Detected;
// httpapi does it for serve's /mcp), and the session that gets the refusal
// stops with code loop. So:
//
//   - A→A: A's request names A.
//   - A→B→A: A's session to B learns from B's answers that A reaches B; B's
//     request to A names B, and A refuses it. Longer cycles the same way,
//     once an answer has come round: whichever session of the cycle
//     connects last is refused, and every answer (to a health probe, a list
//     refresh) carries the Reach of the moment, so a cycle closed later is
//     caught by the next request that goes round it.
//
// What an instance believes comes from the answers of the servers it was
// configured with, never from the requests it serves: a client may send any
// Via (the one it forges refuses its own request, nothing else), where
// users learnt from requests let one request with a forged Via stop every
// session of a Switchboard that used the one it named, for as long as the
// forged user was remembered. An upstream can name any ids in its Reach,
// but it could as well refuse to serve: it stops no session but its own
// and those of Switchboards that use this one through it.

// ViaHeader names the Switchboard instance a request comes from.
const ViaHeader = "Switchboard-Via"

// ReachHeader, on an answer of a Switchboard's /mcp, names that
// Switchboard first, then the instances it reaches, comma-separated.
const ReachHeader = "Switchboard-Reach"

const (
	// maxVia bounds the ids a header carries (and that are read of one),
	// and maxLinks the links whose reach an instance keeps.
	maxVia   = 16
	maxLinks = 4096
	// reachTTL is how long a link's reach is believed without an answer
	// that repeats it. Sessions probe their servers every 30 s by default.
	reachTTL = 10 * time.Minute
)

// Instance is one Switchboard process as other Switchboards see it: an id,
// and the instances its remote sessions reach. A process makes one, and
// gives it to its sessions (upstream.Options.Instance) and to the endpoint
// that checks the requests it serves (httpapi.Options.Instance). It is
// safe for concurrent use.
type Instance struct {
	id    string
	now   func() time.Time
	mu    sync.Mutex
	links map[*Reach]reached
}

// reached is what one link learnt from its server's last answer.
type reached struct {
	server string // the session's server name
	ids    []string
	at     time.Time
}

// NewInstance returns an instance with a new random id.
func NewInstance() *Instance {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand)
	return &Instance{id: hex.EncodeToString(b), now: time.Now, links: map[*Reach]reached{}}
}

// ID returns the instance's id.
func (in *Instance) ID() string { return in.id }

// Via returns the ViaHeader value of a request this instance sends.
func (in *Instance) Via() string { return in.id }

// Arrived looks at the ViaHeader values of a request this instance is
// asked to serve, and reports a loop if they name this instance or one it
// reaches. It learns nothing from them.
func (in *Instance) Arrived(via []string) (loop bool) {
	ids := parseVia(via)
	if len(ids) == 0 {
		return false
	}
	reach := in.reach("")
	return slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(reach, id) })
}

// ReachOf returns the ReachHeader value of an answer of this instance's
// endpoint for server (its /mcp/NAME), or for every server with "" (the
// aggregate /mcp, and toolsets).
func (in *Instance) ReachOf(server string) string {
	ids := in.reach(server)
	return strings.Join(ids[:min(len(ids), maxVia)], ", ")
}

// reach returns this instance's id and those its links to server (every
// link, with "") reach, most recently heard first.
func (in *Instance) reach(server string) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	cutoff := in.now().Add(-reachTTL)
	maps.DeleteFunc(in.links, func(l *Reach, r reached) bool { return r.at.Before(cutoff) || l.link.Err() != nil })
	seen := map[string]time.Time{}
	for _, r := range in.links {
		if server != "" && r.server != server {
			continue
		}
		for _, id := range r.ids {
			if id != in.id && r.at.After(seen[id]) {
				seen[id] = r.at
			}
		}
	}
	ids := slices.SortedFunc(maps.Keys(seen), func(a, b string) int {
		return cmp.Or(seen[b].Compare(seen[a]), strings.Compare(a, b))
	})
	return append([]string{in.id}, ids...)
}

// Reach is what one link of a remote session learns of the instances its
// server reaches. Create it with Track.
type Reach struct {
	in     *Instance
	server string
	link   context.Context // ends with the link, and what it taught with it
}

// Track returns the Reach of a link of server's session, which the
// instance believes until ctx (the link's) ends.
func (in *Instance) Track(ctx context.Context, server string) *Reach {
	return &Reach{in: in, server: server, link: ctx}
}

// Answered takes the ReachHeader values of an answer of the link's server
// as what it reaches now: none for a server that is no Switchboard.
func (r *Reach) Answered(values []string) {
	ids := parseVia(values)
	in := r.in
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(ids) == 0 || r.link.Err() != nil {
		delete(in.links, r)
		return
	}
	if _, ok := in.links[r]; !ok && len(in.links) >= maxLinks {
		return // bounded: a link more is not believed until one ends
	}
	in.links[r] = reached{server: r.server, ids: ids, at: in.now()}
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
