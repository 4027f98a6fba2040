package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMembers(t *testing.T) {
	in := []byte(` {"jsonrpc":"2.0", "id" : 7,"params":{"name":"e\"cho","arguments":{"a":[1,{"b":"}"}]}},"x":null,"t":true,"f":false,"n":-1.5e3} `)
	var keys []string
	var vals []string
	if err := Members(in, func(k, v []byte) bool {
		keys = append(keys, string(k))
		vals = append(vals, string(v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"jsonrpc", "id", "params", "x", "t", "f", "n"}
	wantVals := []string{`"2.0"`, `7`, `{"name":"e\"cho","arguments":{"a":[1,{"b":"}"}]}}`, `null`, `true`, `false`, `-1.5e3`}
	if len(keys) != len(wantKeys) {
		t.Fatalf("keys %q, want %q", keys, wantKeys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] || vals[i] != wantVals[i] {
			t.Errorf("member %d = %s: %s, want %s: %s", i, keys[i], vals[i], wantKeys[i], wantVals[i])
		}
	}
	params, _ := Get(in, "params")
	name, _ := Get(params, "name")
	if _, ok := String(name); ok {
		t.Errorf("String(%s) is plain; it has an escape", name)
	}
	args, _ := Get(params, "arguments")
	if string(args) != `{"a":[1,{"b":"}"}]}` {
		t.Errorf("arguments %s", args)
	}
}

func TestMembersRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"s"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":[1}`, `{"a":{]}`,
		`{"a":"unterminated}`, "{\"a\":\"ctl\x01\"}", `{"a":tru}`, `{a:1}`, `{"a":1 "b":2}`} {
		if err := Members([]byte(in), func(_, _ []byte) bool { return true }); err == nil {
			t.Errorf("Members(%q) = nil, want ErrSyntax", in)
		}
	}
}

// Members walks to the end exactly the objects encoding/json finds valid,
// and every value it yields equals what encoding/json decodes for its key.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"id":"sb-relay-1","result":{"content":[{"type":"text","text":"x\"}"}]}}`,
		`{"a":[{"b":[]}],"c":"\u00e9\\"}`, `[1]`, `{"a":}`, `{"a":1}}`, `{"0": {[]}00`, `{"n":-0.5e+7,"m":01}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		valid := json.Valid(b) && json.Unmarshal(b, &want) == nil
		got := map[string][]byte{}
		err := Members(b, func(k, v []byte) bool {
			if bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k) { // encoding/json rewrites the others
				got[string(k)] = v
			}
			return true
		})
		if deep := bytes.Count(b, []byte("[")) + bytes.Count(b, []byte("{")); deep > maxDepth {
			return // deeper than Members follows, and encoding/json does
		}
		if valid != (err == nil) {
			t.Fatalf("Members(%q) = %v; encoding/json says valid: %v", b, err, valid)
		}
		if !valid {
			return
		}
		for k, v := range got {
			// Numbers as they are written: one too large for a float64
			// (1e400) is valid JSON all the same.
			a, errA := decodeNumbers(v)
			w, errW := decodeNumbers(want[k])
			if errA != nil || errW != nil {
				t.Fatalf("key %q: %q (%v) vs %q (%v)", k, v, errA, want[k], errW)
			}
			if !bytes.Equal(mustMarshal(a), mustMarshal(w)) {
				t.Fatalf("key %q: got %s, encoding/json has %s", k, v, want[k])
			}
		}
	})
}

// decodeNumbers decodes b keeping its numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func BenchmarkMembers(b *testing.B) {
	text := bytes.Repeat([]byte("abcdefgh"), 4096)
	msg := []byte(`{"jsonrpc":"2.0","id":"sb-relay-1","result":{"content":[{"type":"text","text":"` + string(text) + `"}],"structuredContent":{"text":"` + string(text) + `"}}}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := Members(msg, func(_, _ []byte) bool { return true }); err != nil {
			b.Fatal(err)
		}
	}
}

// AppendString writes each string so that encoding/json decodes it to what
// it decodes json.Marshal's encoding to, and copies a plain one as it is.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "echo", "a b-c_d.e/f:g", "quote\"d", `back\slash`, "tab\t", "nl\n", "\x00", "\x7f",
		"<tag>&", "é", "日本", "\u2028", "bad\xffutf8"} {
		got := AppendString([]byte("x"), s)
		want, _ := json.Marshal(s)
		if string(got[1:]) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"echo", "quote\"d", "\x00", "<&>", "é", "bad\xffutf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want string
		if err := json.Unmarshal(AppendString(nil, s), &got); err != nil {
			t.Fatalf("AppendString(%q) is not a JSON string: %v", s, err)
		}
		m, _ := json.Marshal(s)
		if err := json.Unmarshal(m, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AppendString(%q) decodes to %q, json.Marshal's to %q", s, got, want)
		}
	})
}

// Contains finds what bytes.Contains finds.
func TestContains(t *testing.T) {
	for _, c := range []struct{ b, sep string }{
		{"", ""}, {"", `"`}, {`"`, `"`}, {`""`, `"x"`}, {`{"a":"b"}`, `"b"`}, {`{"a":"b"}`, `"b"}`},
		{`{"a":"b"}`, `"c"`}, {`"""""x"`, `"x"`}, {`"a"`, `"a""`}, {`x"notifications/progress"`, `"notifications/progress"`},
		{`"notifications/progres"`, `"notifications/progress"`},
	} {
		if got, want := Contains([]byte(c.b), []byte(c.sep)), bytes.Contains([]byte(c.b), []byte(c.sep)); got != want {
			t.Errorf("Contains(%q, %q) = %v, want %v", c.b, c.sep, got, want)
		}
	}
}

func FuzzContains(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"sb-1","result":{}}`), []byte(`"sb-`))
	f.Add([]byte(`"""a"`), []byte(`"a"`))
	f.Fuzz(func(t *testing.T, b, sep []byte) {
		if got, want := Contains(b, sep), bytes.Contains(b, sep); got != want {
			t.Fatalf("Contains(%q, %q) = %v, want %v", b, sep, got, want)
		}
	})
}

// A result that does not hold sep, as nearly every result does not: the
// search that bytes.Index turns into a compare at every byte.
func BenchmarkContains(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":"sb-1","result":{"content":[{"type":"text","text":"` +
		strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 29) + `"}]}}`)
	sep := []byte(`"notifications/progress"`)
	for _, f := range []struct {
		name string
		fn   func(b, sep []byte) bool
	}{{"bytes", bytes.Contains}, {"rawjson", Contains}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if f.fn(msg, sep) {
					b.Fatal("found")
				}
			}
		})
	}
}

// A string is read as encoding/json reads it whatever its length and
// wherever in it a control character, an escape or a byte at the edges of
// plain (0x1f, 0x20, 0x7f, 0x80, 0xff) falls: skipString reads 32 and 8
// bytes at a time, then byte by byte.
func TestStringOfEveryLengthAndEveryPosition(t *testing.T) {
	for _, odd := range []string{"\x00", "\x1f", " ", "\x7f", "\x80", "\xff", `\"`, `\\`, `\n`, `\u00e9`, `\u00`, `\x`, `\`, `"`} {
		for n := range 80 {
			for at := 0; at <= n; at++ {
				text := strings.Repeat("a", at) + odd + strings.Repeat("b", n-at)
				msg := []byte(`{"k":"` + text + `","z":1}`)
				err := Members(msg, func(_, _ []byte) bool { return true })
				if valid := json.Valid(msg); valid != (err == nil) {
					t.Fatalf("Members(%q) = %v; encoding/json says valid: %v", msg, err, valid)
				}
			}
		}
	}
}
