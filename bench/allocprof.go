package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// AllocProfile attributes one side's allocations per call, from the
// runtime's allocation profile (what pprof's "allocs" profile reads)
// recorded at MemProfileRate 1, so every allocation is counted, not a
// sample: the difference between two snapshots taken around a block of
// sequential calls.
type AllocProfile struct {
	Transport     string       `json:"transport"`
	Side          string       `json:"side"`
	Calls         int          `json:"calls"`
	BytesPerCall  float64      `json:"bytes_per_call"`
	AllocsPerCall float64      `json:"allocs_per_call"`
	Owners        []AllocShare `json:"owners"` // by who allocated, largest first
	Sites         []AllocShare `json:"sites"`  // top allocation sites, largest first
	// OwnSites are the top sites charged to Switchboard itself.
	OwnSites []AllocShare `json:"own_sites,omitempty"`
	// Files, if written (Config.ProfileDir), are pprof allocs profiles taken
	// before and after the block: go tool pprof -sample_index=alloc_space
	// -base BEFORE AFTER shows the same block.
	Files []string `json:"files,omitempty"`
}

// AllocShare is the part of a profile charged to one owner or site, per
// call (or, in a scale profile, per session).
type AllocShare struct {
	Name   string  `json:"name"`
	Bytes  float64 `json:"bytes"`
	Allocs float64 `json:"allocs"`
	Share  float64 `json:"share"` // of the profile's bytes
}

// Owner returns the share of the named owner (zero if none).
func (p *AllocProfile) Owner(name string) AllocShare {
	for _, o := range p.Owners {
		if o.Name == name {
			return o
		}
	}
	return AllocShare{Name: name}
}

// Owners of allocations, by the innermost frame outside the standard
// library, except that everything under the SDK's internal/json.Unmarshal
// is charged to it.
const (
	OwnerSDKUnmarshal = "go-sdk internal/json.Unmarshal"
	OwnerSDK          = "go-sdk, other"
	OwnerSwitchboard  = "Switchboard (upstream, executor)"
	OwnerTestserver   = "test server tool handlers"
	OwnerHarness      = "harness (floor client/server, callers)"
	OwnerStdlib       = "standard library / runtime only"
)

const sdkUnmarshal = "github.com/modelcontextprotocol/go-sdk/internal/json.Unmarshal"

// topSites is how many allocation sites a profile keeps.
const topSites = 8

// profileAllocs attributes s's allocations over cfg.ProfileCalls
// sequential calls.
func profileAllocs(ctx context.Context, cfg *Config, transport string, s *side) (*AllocProfile, error) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1 // takes effect at each P's next allocation
	defer func() { runtime.MemProfileRate = old }()

	lat := make([]time.Duration, max(cfg.Warmup, cfg.ProfileCalls))
	measure(ctx, s.echo, cfg.Warmup, 1, lat)
	p := &AllocProfile{Transport: transport, Side: s.name, Calls: cfg.ProfileCalls}
	tag := strings.NewReplacer(" ", "-", ".", "-").Replace(strings.ToLower(transport + "-" + s.name))
	before, err := memProfile(cfg, tag+"-before", &p.Files)
	if err != nil {
		return nil, err
	}
	smp := measure(ctx, s.echo, cfg.ProfileCalls, 1, lat)
	if smp.Errors > 0 {
		return nil, fmt.Errorf("profile %s %s: %d calls failed", transport, s.name, smp.Errors)
	}
	after, err := memProfile(cfg, tag+"-after", &p.Files)
	if err != nil {
		return nil, err
	}

	p.Calls = smp.Calls
	p.Owners, p.Sites, p.OwnSites, p.BytesPerCall, p.AllocsPerCall = attribute(before, after, allocated, float64(smp.Calls))
	cfg.logf("alloc profile %s %-17s %8.0f B/call %6.1f allocs/call; top owner %s", transport, s.name,
		p.BytesPerCall, p.AllocsPerCall, p.Owners[0].Name)
	return p, nil
}

// allocCount is what one allocation stack has allocated so far, and what
// of it is still in use.
type allocCount struct{ bytes, objs, inuseBytes, inuseObjs int64 }

// allocated and inUse pick a figure out of an allocCount.
func allocated(c allocCount) (bytes, objs int64) { return c.bytes, c.objs }
func inUse(c allocCount) (bytes, objs int64)     { return c.inuseBytes, c.inuseObjs }

// attribute charges the growth of value from before to after to owners and
// sites (and, apart, the sites charged to Switchboard), divided by per
// (calls, sessions), and returns the totals per unit.
func attribute(before, after map[[32]uintptr]allocCount, value func(allocCount) (int64, int64), per float64) (owners, sites, own []AllocShare, bytes, objs float64) {
	byOwner := map[string]*AllocShare{}
	bySite := map[string]*AllocShare{}
	byOwnSite := map[string]*AllocShare{}
	for stk, a := range after {
		ab, ao := value(a)
		bb, bo := value(before[stk])
		db, do := float64(ab-bb), float64(ao-bo)
		if db == 0 && do == 0 {
			continue
		}
		owner, site, self := classify(stk)
		if self {
			continue // the profiler's own snapshot of the profile
		}
		targets := []struct {
			m    map[string]*AllocShare
			name string
		}{{byOwner, owner}, {bySite, site}}
		if owner == OwnerSwitchboard {
			targets = append(targets, struct {
				m    map[string]*AllocShare
				name string
			}{byOwnSite, site})
		}
		for _, m := range targets {
			e := m.m[m.name]
			if e == nil {
				e = &AllocShare{Name: m.name}
				m.m[m.name] = e
			}
			e.Bytes += db
			e.Allocs += do
		}
		bytes += db
		objs += do
	}
	finish := func(m map[string]*AllocShare, keep int) []AllocShare {
		var out []AllocShare
		for _, e := range m {
			e.Share = e.Bytes / bytes
			e.Bytes /= per
			e.Allocs /= per
			out = append(out, *e)
		}
		slices.SortFunc(out, func(a, b AllocShare) int {
			switch {
			case a.Bytes > b.Bytes:
				return -1
			case a.Bytes < b.Bytes:
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		if keep > 0 && len(out) > keep {
			out = out[:keep]
		}
		return out
	}
	return finish(byOwner, 0), finish(bySite, topSites), finish(byOwnSite, topSites), bytes / per, objs / per
}

// memProfile returns the runtime's cumulative allocation profile by stack,
// after two collections (a profile is published up to two cycles late).
// If cfg.ProfileDir and name are set it also writes the pprof allocs
// profile there, as name.pprof.
func memProfile(cfg *Config, name string, files *[]string) (map[[32]uintptr]allocCount, error) {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for range 10 {
		n, _ := runtime.MemProfile(nil, true)
		recs = make([]runtime.MemProfileRecord, n+256)
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = nil
	}
	if recs == nil {
		return nil, fmt.Errorf("memory profile kept growing")
	}
	out := make(map[[32]uintptr]allocCount, len(recs))
	for _, r := range recs {
		c := out[r.Stack0]
		c.bytes += r.AllocBytes
		c.objs += r.AllocObjects
		c.inuseBytes += r.InUseBytes()
		c.inuseObjs += r.InUseObjects()
		out[r.Stack0] = c
	}
	if cfg.ProfileDir != "" && name != "" {
		path := filepath.Join(cfg.ProfileDir, name+".pprof")
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		*files = append(*files, path)
	}
	return out, nil
}

// classify names the owner of an allocation stack and its site: the
// innermost frame outside the runtime, with the innermost frame of a
// non-standard-library package after it when that is another frame. self
// reports an allocation of the profiler itself (memProfile), which the
// profile leaves out.
func classify(stk [32]uintptr) (owner, site string, self bool) {
	n := slices.Index(stk[:], 0)
	if n < 0 {
		n = len(stk)
	}
	frames := runtime.CallersFrames(stk[:n])
	var leaf, firstModule string
	owner = ""
	for {
		f, more := frames.Next()
		fn := f.Function
		if fn != "" && !strings.HasPrefix(fn, "runtime.") {
			if leaf == "" {
				leaf = fmt.Sprintf("%s (%s:%d)", shortFunc(fn), filepath.Base(f.File), f.Line)
			}
			if fn == sdkUnmarshal {
				owner = OwnerSDKUnmarshal
			}
			if fn == memProfileFunc {
				return "", "", true
			}
			if firstModule == "" && !isStdlib(fn) {
				firstModule = fn
			}
		}
		if !more {
			break
		}
	}
	if owner == "" {
		owner = ownerOf(firstModule)
	}
	if leaf == "" {
		leaf = "runtime"
	}
	site = leaf
	if firstModule != "" && !strings.HasPrefix(leaf, shortFunc(firstModule)+" ") {
		site += " ← " + shortFunc(firstModule)
	}
	return owner, site, false
}

// memProfileFunc is memProfile's full name, as it appears in stacks.
const memProfileFunc = "github.com/switchboard-mcp/switchboard/bench.memProfile"

// ownerOf maps the innermost non-standard-library function to its owner.
func ownerOf(fn string) string {
	switch {
	case fn == "":
		return OwnerStdlib
	case strings.Contains(fn, "modelcontextprotocol/go-sdk"), strings.Contains(fn, "segmentio/"),
		strings.Contains(fn, "google/jsonschema-go"), strings.Contains(fn, "yosida95/uritemplate"):
		return OwnerSDK
	case strings.Contains(fn, "switchboard/internal/testserver"):
		return OwnerTestserver
	case strings.Contains(fn, "switchboard/bench"):
		return OwnerHarness
	case strings.Contains(fn, "switchboard-mcp/switchboard"):
		return OwnerSwitchboard
	}
	return "other: " + shortFunc(fn)
}

// isStdlib reports whether fn belongs to the standard library: its import
// path's first element has no dot.
func isStdlib(fn string) bool {
	path := fn
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		path = path[:i]
	} else if i := strings.IndexByte(path, '.'); i >= 0 {
		path = path[:i]
	}
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// shortFunc trims well-known module prefixes from a function name.
func shortFunc(fn string) string {
	for _, p := range []string{"github.com/modelcontextprotocol/", "github.com/switchboard-mcp/switchboard/", "github.com/switchboard-mcp/", "github.com/"} {
		if s, ok := strings.CutPrefix(fn, p); ok {
			return s
		}
	}
	return fn
}
