package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// terms appends to dst the index terms of text: its words, a name split
// at its snake_case, kebab-case and camelCase joints ("listDirectory",
// "list_directory" and "list-directory" are all "list" "directori"),
// lower-cased, stop words left out, each stemmed (stem). A word that mixes
// letters and digits is split between them too ("utf8" is "utf" "8").
func terms(dst []string, text string) []string {
	start := -1 // where the current word began, or -1
	var prev rune
	flush := func(end int) {
		if start >= 0 {
			dst = appendTerm(dst, text[start:end])
			start = -1
		}
	}
	for i, r := range text {
		letter, digit := unicode.IsLetter(r), unicode.IsDigit(r)
		if !letter && !digit {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 {
			switch {
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush(i) // camel|Case
			case unicode.IsUpper(prev) && unicode.IsLower(r) && i-start > utf8.RuneLen(prev):
				// HTTP|Server: the last capital begins the next word.
				at := i - utf8.RuneLen(prev)
				flush(at)
				start = at
			case digit != unicode.IsDigit(prev):
				flush(i) // utf|8
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(text))
	return dst
}

// appendTerm appends the term of one word, if it is not a stop word.
func appendTerm(dst []string, word string) []string {
	w := strings.ToLower(word)
	if stopWords[w] {
		return dst
	}
	return append(dst, stem(w))
}

// stopWords are the English words that say nothing of what a tool does;
// a query of plain words is full of them ("a tool that lists the files in
// a directory").
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for w := range strings.FieldsSeq(`a an the and or but if then else of to in on at by for with from into onto
		over under as is are was were be been being am it its this that these those there here
		do does did done can could should would will shall may might must i me my we us our you your
		he she they them their his her what which who whom whose when where why how all any each
		some such no not only own same so than too very just also about via per
		tool tools want need please use using used something thing things let`) {
		m[w] = true
	}
	return m
}()
