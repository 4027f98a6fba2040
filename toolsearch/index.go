// Package toolsearch is an in-memory full-text index of MCP tools, for a
// client that cannot take thousands of them into its context: it finds
// the few a plain-words query is about.
//
// Tools are ranked by BM25F: each field of a tool (its name, title,
// server name, description, parameter names and descriptions, and
// annotations) counts with a weight of its own, names are split at their
// snake_case, kebab-case and camelCase joints, and every word is stemmed
// (Porter's English stemmer), so "list the files of a folder" finds
// list_directory ("Get a detailed listing of all files and directories
// in a specified path").
//
// The index is kept per server: Set replaces one server's tools without
// touching the others' (a server's tools/list_changed re-indexes that
// server only), and the corpus statistics BM25 needs (document
// frequencies, field lengths) are sums the change adjusts.
package toolsearch

import (
	"math"
	"slices"
	"sync"
)

// Tool is one tool as the index knows it.
type Tool struct {
	// Server is the name of the server that offers the tool, Name its
	// name there.
	Server, Name string
	// Exposed is the name an endpoint shows the tool under
	// ("server__tool", a toolset's rename); Name if empty.
	Exposed string
	// Title and Description are the tool's, as shown (a toolset's
	// description replaces the server's).
	Title, Description string
	// Params are the tool's arguments, from its input schema.
	Params []Param
	// Annotations are words for the tool's hints ("read-only",
	// "destructive").
	Annotations []string
}

// Param is an argument of a tool.
type Param struct{ Name, Description string }

// field is a part of a tool the index scores on its own.
type field uint8

const (
	fieldName field = iota // the tool's name and its exposed name
	fieldTitle
	fieldServer
	fieldDescription
	fieldParams
	fieldAnnotations
	numFields
)

// BM25F's parameters. A name says what a tool does in two or three words,
// so a query word found there weighs most; the server's name and the
// arguments help to tell apart tools of one kind. k1 is BM25's usual; b
// normalizes by length a description more than a name, whose length says
// little.
var (
	weights = [numFields]float64{fieldName: 3, fieldTitle: 2, fieldServer: 1.5, fieldDescription: 1,
		fieldParams: 0.6, fieldAnnotations: 0.5}
	lengthNorm = [numFields]float64{fieldName: 0.3, fieldTitle: 0.3, fieldServer: 0.2, fieldDescription: 0.75,
		fieldParams: 0.75, fieldAnnotations: 0.3}
)

const k1 = 1.2

// doc is one indexed tool: the tool and the length in terms of each of
// its fields.
type doc struct {
	tool *Tool
	lens [numFields]uint16
}

// posting is one tool's counts of one term, by field (saturated at 255).
type posting struct {
	doc uint32 // index into segment.docs
	tf  [numFields]uint8
}

// segment is the index of one server's tools.
type segment struct {
	docs  []doc
	terms map[string][]posting
	lens  [numFields]int64 // sums of docs' lens
}

// Index is a search index of the tools of many servers. The zero value is
// not usable; make one with New. It is safe for concurrent use: searches
// run in parallel, a Set waits for them.
type Index struct {
	mu   sync.RWMutex
	segs map[string]*segment // by server
	df   map[string]int32    // number of tools, of every server, that have the term
	n    int                 // number of tools
	lens [numFields]int64    // sums of every doc's lens
}

// New returns an empty index.
func New() *Index {
	return &Index{segs: make(map[string]*segment), df: make(map[string]int32)}
}

// Set makes tools what the index holds of server, replacing what it held;
// no tools removes the server. The tools' Server fields are set to server.
// The tools are the index's from then on: the caller does not change them.
// Only this server's tools are tokenized.
func (ix *Index) Set(server string, tools []Tool) {
	var seg *segment
	if len(tools) > 0 {
		seg = build(server, tools)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.segs[server]; old != nil {
		ix.account(old, -1)
		delete(ix.segs, server)
	}
	if seg != nil {
		ix.account(seg, 1)
		ix.segs[server] = seg
	}
}

// Len is the number of tools in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// account adds (sign 1) or subtracts (-1) a segment's statistics.
func (ix *Index) account(seg *segment, sign int) {
	ix.n += sign * len(seg.docs)
	for f := range numFields {
		ix.lens[f] += int64(sign) * seg.lens[f]
	}
	for term, ps := range seg.terms {
		n := ix.df[term] + int32(sign*len(ps))
		if n <= 0 {
			delete(ix.df, term)
		} else {
			ix.df[term] = n
		}
	}
}

// build tokenizes one server's tools into a segment.
func build(server string, tools []Tool) *segment {
	seg := &segment{docs: make([]doc, len(tools)), terms: make(map[string][]posting)}
	var buf []string
	counts := make(map[string]*[numFields]uint8)
	for i := range tools {
		t := &tools[i]
		t.Server = server
		clear(counts)
		d := &seg.docs[i]
		d.tool = t
		add := func(f field, text string) {
			buf = terms(buf[:0], text)
			d.lens[f] = uint16(min(int(d.lens[f])+len(buf), math.MaxUint16))
			for _, term := range buf {
				c := counts[term]
				if c == nil {
					c = new([numFields]uint8)
					counts[term] = c
				}
				if c[f] < math.MaxUint8 {
					c[f]++
				}
			}
		}
		add(fieldName, t.Name)
		if t.Exposed != "" && t.Exposed != t.Name && t.Exposed != server+"__"+t.Name {
			add(fieldName, t.Exposed) // a rename the endpoint shows
		}
		add(fieldTitle, t.Title)
		add(fieldServer, server)
		add(fieldDescription, t.Description)
		for _, p := range t.Params {
			add(fieldParams, p.Name)
			add(fieldParams, p.Description)
		}
		for _, a := range t.Annotations {
			add(fieldAnnotations, a)
		}
		for term, c := range counts {
			seg.terms[term] = append(seg.terms[term], posting{doc: uint32(i), tf: *c})
		}
		for f := range numFields {
			seg.lens[f] += int64(d.lens[f])
		}
	}
	// The postings were appended to slices grown by doubling: cut them
	// to size, since the segment keeps them until the server changes.
	for term, ps := range seg.terms {
		seg.terms[term] = slices.Clip(ps)
	}
	return seg
}

// Hit is a tool that a search found, with its score (higher is better;
// comparable only within one search).
type Hit struct {
	Tool  *Tool
	Score float64
}

// Search returns at most limit tools that match query, best first (ties
// by server, then name). allow, if not nil, decides which tools may be
// found at all: a tool it refuses is neither scored nor returned. A query
// with no word the index could use finds nothing.
func (ix *Index) Search(query string, limit int, allow func(*Tool) bool) []Hit {
	if limit <= 0 {
		return nil
	}
	qterms := terms(nil, query)
	slices.Sort(qterms)
	qterms = slices.Compact(qterms)
	if len(qterms) == 0 {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.n == 0 {
		return nil
	}
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(float64(ix.lens[f])/float64(ix.n), 1)
	}
	idf := make([]float64, len(qterms))
	for i, term := range qterms {
		df := float64(ix.df[term])
		idf[i] = math.Log(1 + (float64(ix.n)-df+0.5)/(df+0.5))
	}
	top := make(topK, 0, limit+1)
	var scores []float64 // by doc of the segment; NaN: refused by allow
	for _, seg := range ix.segs {
		scores = scores[:0]
		for range seg.docs {
			scores = append(scores, 0)
		}
		found := false
		for i, term := range qterms {
			for _, p := range seg.terms[term] {
				s := &scores[p.doc]
				if math.IsNaN(*s) {
					continue
				}
				d := &seg.docs[p.doc]
				if *s == 0 && allow != nil && !allow(d.tool) {
					*s = math.NaN()
					continue
				}
				tf := 0.0
				for f := range numFields {
					if p.tf[f] == 0 {
						continue
					}
					norm := 1 - lengthNorm[f] + lengthNorm[f]*float64(d.lens[f])/avg[f]
					tf += weights[f] * float64(p.tf[f]) / norm
				}
				*s += idf[i] * tf * (k1 + 1) / (k1 + tf)
				found = true
			}
		}
		if !found {
			continue
		}
		for i, s := range scores {
			if s > 0 {
				top.offer(Hit{Tool: seg.docs[i].tool, Score: s}, limit)
			}
		}
	}
	slices.SortFunc(top, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return top
}

// better reports whether a ranks before b: a higher score, then by server
// and name, so that the order of equal scores is the same every time.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Tool.Server != b.Tool.Server {
		return a.Tool.Server < b.Tool.Server
	}
	return a.Tool.Name < b.Tool.Name
}

// topK keeps the best hits offered, as a heap whose root is the worst of
// them: a search of thousands of matches sorts only the few it returns.
type topK []Hit

// offer keeps h if it is among the limit best so far.
func (t *topK) offer(h Hit, limit int) {
	if len(*t) < limit {
		*t = append(*t, h)
		t.up(len(*t) - 1)
		return
	}
	if !better(h, (*t)[0]) {
		return
	}
	(*t)[0] = h
	t.down(0)
}

func (t topK) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !better(t[parent], t[i]) { // the parent is worse: the root stays the worst
			return
		}
		t[parent], t[i] = t[i], t[parent]
		i = parent
	}
}

func (t topK) down(i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(t) && better(t[worst], t[l]) {
			worst = l
		}
		if r < len(t) && better(t[worst], t[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		t[i], t[worst] = t[worst], t[i]
		i = worst
	}
}
