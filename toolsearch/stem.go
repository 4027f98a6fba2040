package toolsearch

// stem returns the Porter stem of word, a lower-case ASCII word ("listing",
// "listed" and "lists" all become "list"), so that a query's words meet a
// description's in any of their English forms. It is M. F. Porter's 1980
// algorithm as his reference implementation has it; words of one or two
// letters, and words with a byte outside a-z, are returned as they are.
func stem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		if word[i] < 'a' || word[i] > 'z' {
			return word
		}
	}
	s := &stemmer{b: []byte(word), k: len(word) - 1}
	s.step1ab()
	if s.k > 0 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	return string(s.b[:s.k+1])
}

// stemmer holds a word being stemmed: b[0..k] is the word so far; j marks
// the end of the stem before the suffix that ends last matched.
type stemmer struct {
	b    []byte
	k, j int
}

// cons reports whether b[i] is a consonant: not a, e, i, o, u, and not a
// y that follows a consonant.
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// m is the number of vowel-consonant sequences in b[0..j]: [C](VC)^m[V].
func (s *stemmer) m() int {
	n, i := 0, 0
	for ; i <= s.j && s.cons(i); i++ {
	}
	for i <= s.j {
		for ; i <= s.j && !s.cons(i); i++ {
		}
		if i > s.j {
			break
		}
		n++
		for ; i <= s.j && s.cons(i); i++ {
		}
	}
	return n
}

// vowelInStem reports whether b[0..j] has a vowel.
func (s *stemmer) vowelInStem() bool {
	for i := 0; i <= s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doubleC reports whether b[i-1..i] is a double consonant.
func (s *stemmer) doubleC(i int) bool {
	return i >= 1 && s.b[i] == s.b[i-1] && s.cons(i)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant and the last
// consonant is not w, x or y: the short syllables of "hop" and "cav(e)".
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b[0..k] ends with suffix, setting j before it.
func (s *stemmer) ends(suffix string) bool {
	n := len(suffix)
	if n > s.k+1 || string(s.b[s.k-n+1:s.k+1]) != suffix {
		return false
	}
	s.j = s.k - n
	return true
}

// setTo replaces b[j+1..k] with t.
func (s *stemmer) setTo(t string) {
	s.b = append(s.b[:s.j+1], t...)
	s.k = s.j + len(t)
}

// r replaces the suffix with t if the stem before it has a measure above 0.
func (s *stemmer) r(t string) {
	if s.m() > 0 {
		s.setTo(t)
	}
}

// step1ab removes plurals and -ed or -ing.
func (s *stemmer) step1ab() {
	if s.b[s.k] == 's' {
		switch {
		case s.ends("sses"):
			s.k -= 2
		case s.ends("ies"):
			s.setTo("i")
		case s.b[s.k-1] != 's':
			s.k--
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.k--
		}
		return
	}
	if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.k = s.j
		switch {
		case s.ends("at"):
			s.setTo("ate")
		case s.ends("bl"):
			s.setTo("ble")
		case s.ends("iz"):
			s.setTo("ize")
		case s.doubleC(s.k):
			s.k--
			switch s.b[s.k] {
			case 'l', 's', 'z':
				s.k++
			}
		default:
			s.j = s.k
			if s.m() == 1 && s.cvc(s.k) {
				s.setTo("e")
			}
		}
	}
}

// step1c turns a final y into i when there is another vowel in the stem.
func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[s.k] = 'i'
	}
}

// suffixRule is one suffix and what it becomes.
type suffixRule struct{ from, to string }

// The rules of steps 2 and 3, tried in order.
var (
	step2Rules = []suffixRule{
		{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
		{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
		{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
		{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
		{"logi", "log"},
	}
	step3Rules = []suffixRule{
		{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
	}
	step4Suffixes = []string{
		"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
		"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
	}
)

// step2 maps double suffixes to single ones (-ization to -ize).
func (s *stemmer) step2() { s.rules(step2Rules) }

// step3 deals with -ic-, -full, -ness.
func (s *stemmer) step3() { s.rules(step3Rules) }

// rules applies the first rule whose suffix ends the word, if the stem
// before it has a measure above 0. The reference implementation switches
// on the penultimate letter; the first match of the list in order is the
// same rule, since no suffix of a list ends another that comes before it.
func (s *stemmer) rules(rules []suffixRule) {
	for _, rule := range rules {
		if s.ends(rule.from) {
			s.r(rule.to)
			return
		}
	}
}

// step4 takes off -ant, -ence and the like in context <c>vcvc<v>.
func (s *stemmer) step4() {
	if s.k < 1 {
		return
	}
	for _, suffix := range step4Suffixes {
		if !s.ends(suffix) {
			continue
		}
		if suffix == "ion" && (s.j < 0 || s.b[s.j] != 's' && s.b[s.j] != 't') {
			return
		}
		if s.m() > 1 {
			s.k = s.j
		}
		return
	}
}

// step5 removes a final -e and turns -ll into -l, for long enough stems.
func (s *stemmer) step5() {
	s.j = s.k
	if s.b[s.k] == 'e' {
		a := s.m()
		if a > 1 || a == 1 && !s.cvc(s.k-1) {
			s.k--
		}
	}
	if s.b[s.k] == 'l' && s.doubleC(s.k) && s.m() > 1 {
		s.k--
	}
}
