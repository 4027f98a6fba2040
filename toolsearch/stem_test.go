package toolsearch

import (
	"slices"
	"testing"
)

// The stemmer gives the outputs of Porter's reference implementation
// (his voc.txt and output.txt) for words that exercise each step.
func TestStemMatchesPorter(t *testing.T) {
	for word, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "digitizer": "digit", "operator": "oper", "generalizations": "gener",
		"oscillators": "oscil", "hopefulness": "hope", "goodness": "good", "adjustable": "adjust",
		"replacement": "replac", "adoption": "adopt", "effective": "effect", "cease": "ceas",
		"controlling": "control", "rolling": "roll", "listing": "list", "listed": "list", "lists": "list",
		"directories": "directori", "directory": "directori", "searching": "search", "files": "file",
		"a": "a", "go": "go", "utf8": "utf8",
	} {
		if got := stem(word); got != want {
			t.Errorf("stem(%q) = %q, want %q", word, got, want)
		}
	}
}

// Names are split at their snake_case, kebab-case and camelCase joints,
// so that every spelling of a name has the same terms.
func TestTermsSplitNames(t *testing.T) {
	for text, want := range map[string][]string{
		"list_directory":       {"list", "directori"},
		"list-directory":       {"list", "directori"},
		"listDirectory":        {"list", "directori"},
		"ListDirectory":        {"list", "directori"},
		"HTTPServer":           {"http", "server"},
		"getHTTPResponseCode":  {"get", "http", "respons", "code"},
		"read_utf8_files":      {"read", "utf", "8", "file"},
		"Lists the files of a": {"list", "file"},
		"search_tools":         {"search"},
		"Ünïcode wörds":        {"ünïcode", "wörds"},
	} {
		if got := terms(nil, text); !slices.Equal(got, want) {
			t.Errorf("terms(%q) = %q, want %q", text, got, want)
		}
	}
}
