package rawjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, in := range []string{
		` {"text":"héllo","n":-1.5e3,"i":7,"list":[1,"two",{"three":[]}],"empty":{},"t":true,"f":false,"z":null} `,
		`{"esc":"a\"b\\c\u00e9\n","bad":"` + "\xff" + `","a":1,"a":2}`,
		`[]`, `"x"`, `0`, `{"deep":[[[[{"k":[{}]}]]]]}`,
	} {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := Decode([]byte(in))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", in, got, ok, want)
		}
	}
	for _, in := range []string{``, `{`, `{"a":}`, `{"a":1}}`, `[1,]`, `{"n":1e400}`, `nul`, `"\x"`, strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)} {
		if got, ok := Decode([]byte(in)); ok {
			t.Errorf("Decode(%q) = %#v, true; want it left to encoding/json", in, got)
		}
	}
}

// Decode gives what encoding/json gives, and leaves to it only what it
// must: bad JSON, a number too large, nesting deeper than maxDepth.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"text":"x\"}","n":[1.5,-0,1e2]}`, `{"a":[{"b":[]}],"c":"\u00e9\\"}`,
		`[1]`, `{"a":}`, `{"a":1}}`, `{"n":1e400}`, "{\"k\xff\":\"v\xfe\"}", `{"a":1,"a":{"b":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		wantErr := json.Unmarshal(b, &want)
		got, ok := Decode(b)
		if ok {
			if wantErr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode(%q) = %#v; encoding/json: %#v, %v", b, got, want, wantErr)
			}
			return
		}
		deep := bytes.Count(b, []byte("[")) + bytes.Count(b, []byte("{"))
		if wantErr == nil && deep <= maxDepth && !bytes.Contains(bytes.ToLower(b), []byte("e")) {
			// No exponent, so no number out of a float64's range: nothing
			// Decode had to leave to encoding/json.
			t.Fatalf("Decode(%q) left valid JSON to encoding/json (%#v)", b, want)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	in := []byte(`{"text":"` + strings.Repeat("abcdefghij", 3277) + `"}`)
	b.Run("rawjson", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Decode(in); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var v any
			if err := json.Unmarshal(in, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
