package clientconfig

import (
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// maxNameLen is the longest Switchboard server name (see
// switchboard.ServerConfig.Validate).
const maxNameLen = 48

// normalizeName maps a client's server key onto Switchboard's name rule,
// ^[a-z0-9][a-z0-9-]{0,47}$ without "__": lowercase it, write accented
// Latin letters without their accents ("Sérveur Ünïcode" is
// "serveur-unicode", not "s-rveur-n-code"), replace each run of
// other characters (including '_' and '.') with one '-', trim '-' from both
// ends and cut to 48 bytes. It returns "" for a key with no letter or digit.
//
// A key that already follows the rule comes back unchanged, so callers can
// detect a rename by comparing.
func normalizeName(key string) string {
	var b strings.Builder
	pendingDash := false
	for _, r := range transliterate(strings.ToLower(key)) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r == '-' {
			if pendingDash {
				b.WriteByte('-')
				pendingDash = false
			}
			b.WriteRune(r)
			continue
		}
		pendingDash = true
	}
	if pendingDash {
		b.WriteByte('-')
	}
	return trimName(b.String(), maxNameLen)
}

// trimName trims '-' from both ends of s and cuts it to at most n bytes
// (s is ASCII), trimming again so the cut cannot leave a trailing '-'.
func trimName(s string, n int) string {
	s = strings.Trim(s, "-")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	return s
}

// suffixName returns base with "-n" appended, shortening base so the result
// still fits in 48 bytes.
func suffixName(base string, n int) string {
	suffix := "-" + strconv.Itoa(n)
	return trimName(base, maxNameLen-len(suffix)) + suffix
}

// letters are the Latin letters that do not decompose into a base letter
// and marks, written as ASCII.
var letters = map[rune]string{
	'ß': "ss", 'æ': "ae", 'œ': "oe", 'ø': "o", 'đ': "d", 'ð': "d", 'þ': "th", 'ł': "l", 'ı': "i", 'ŋ': "n",
}

// transliterate writes s (lower case) with its letters' accents removed:
// each character is decomposed (NFKD: full-width letters and ligatures become plain ones too) and its combining marks dropped, and
// the letters above are spelled out. Characters of other scripts pass
// through, for normalizeName to replace.
func transliterate(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case letters[r] != "":
			b.WriteString(letters[r])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
