package prompt

import (
	"bufio"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	sb "github.com/switchboard-mcp/switchboard"
)

func TestFieldsKeepTheSchemaOrder(t *testing.T) {
	schema := `{"type":"object","required":["zeta","mid"],"properties":{
		"zeta":{"type":"string","title":"Last letter","description":"comes first here"},
		"alpha":{"type":["null","integer"],"default":3},
		"mid":{"enum":["a",1,true]}}}`
	got, err := Fields([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: "zeta", Type: "string", Title: "Last letter", Description: "comes first here", Required: true},
		{Name: "alpha", Type: "integer", Default: []byte("3")},
		{Name: "mid", Enum: []string{"a", "1", "true"}, Required: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %+v,\nwant     %+v", got, want)
	}
}

func TestFieldsOfNoSchemaAndOfBadOnes(t *testing.T) {
	for _, s := range []string{``, `null`, `{}`, `{"properties":null}`, `{"type":"object"}`} {
		if f, err := Fields([]byte(s)); err != nil || f != nil {
			t.Errorf("Fields(%q) = %v, %v; want none", s, f, err)
		}
	}
	for _, s := range []string{`[1]`, `{"properties":[1]}`, `{"properties":{"a":1}}`} {
		if _, err := Fields([]byte(s)); err == nil {
			t.Errorf("Fields(%q): no error", s)
		}
	}
}

func TestElicitAsksEachFieldAndConverts(t *testing.T) {
	req := &sb.ElicitationRequest{Message: "Who?", RequestedSchema: []byte(`{"type":"object","properties":{
		"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"},"tags":{"type":"array"}},"required":["name"]}`)}
	var out strings.Builder
	got, err := Elicit(bufio.NewReader(strings.NewReader("Ada\nnot a number\n36\n\n a, b ,\n")), &out, req)
	if err != nil {
		t.Fatal(err)
	}
	want := sb.ElicitationResponse{Action: "accept", Content: map[string]any{"name": "Ada", "age": int64(36), "tags": []string{"a", "b"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Elicit = %+v, want %+v", got, want)
	}
	for _, s := range []string{"The server asks: Who?", "name (string; required): ", "age (integer): ", "  want a whole number\n", "ok (boolean): "} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the questions lack %q:\n%s", s, out.String())
		}
	}
}

func TestElicitDeclinesOrAccepts(t *testing.T) {
	form := []byte(`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}`)
	optional := []byte(`{"properties":{"a":{"type":"string"}}}`)
	accept, decline := "accept", "decline"
	for _, tc := range []struct {
		name, input string
		req         sb.ElicitationRequest
		want        string
		wantOut     string
	}{
		{"an empty required field", "x\n\n", sb.ElicitationRequest{RequestedSchema: form}, decline, ""},
		{"every field empty", "\n", sb.ElicitationRequest{RequestedSchema: optional}, decline, ""},
		{"the end of input", "", sb.ElicitationRequest{RequestedSchema: form}, decline, ""},
		{"no fields, yes", "y\n", sb.ElicitationRequest{}, accept, "type y to accept"},
		{"no fields, enter", "\n", sb.ElicitationRequest{}, decline, ""},
		{"a URL, enter", "\n", sb.ElicitationRequest{Mode: "url", URL: "https://example.com/auth"}, accept, "Open https://example.com/auth"},
		{"a URL, no", "no\n", sb.ElicitationRequest{Mode: "url", URL: "https://example.com/auth"}, decline, ""},
		{"an unreadable schema", "", sb.ElicitationRequest{RequestedSchema: []byte(`{"properties":7}`)}, decline, "unreadable"},
	} {
		var out strings.Builder
		got, err := Elicit(bufio.NewReader(strings.NewReader(tc.input)), &out, &tc.req)
		if err != nil || got.Action != tc.want || !strings.Contains(out.String(), tc.wantOut) {
			t.Errorf("%s: %+v, %v, asked %q; want %s and %q asked", tc.name, got, err, out.String(), tc.want, tc.wantOut)
		}
	}
}

func TestElicitReportsAReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Elicit(bufio.NewReader(iotest.ErrReader(boom)), &strings.Builder{}, &sb.ElicitationRequest{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
}

func TestConvertToTheFieldsType(t *testing.T) {
	for _, tc := range []struct {
		f       Field
		in      string
		want    any
		wantErr string
	}{
		{Field{Type: "integer"}, "42", int64(42), ""},
		{Field{Type: "integer"}, "4.2", nil, "whole number"},
		{Field{Type: "number"}, "4.5", 4.5, ""},
		{Field{Type: "number"}, "x", nil, "want a number"},
		{Field{Type: "boolean"}, "Yes", true, ""},
		{Field{Type: "boolean"}, "false", false, ""},
		{Field{Type: "boolean"}, "maybe", nil, "yes or no"},
		{Field{Type: "array"}, "a,,b", []string{"a", "b"}, ""},
		{Field{Type: "string", Enum: []string{"red", "blue"}}, "blue", "blue", ""},
		{Field{Type: "string", Enum: []string{"red", "blue"}}, "green", nil, "one of red, blue"},
		{Field{}, "anything", "anything", ""},
	} {
		got, err := convert(tc.f, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("convert(%+v, %q) = %v, %v; want an error with %q", tc.f, tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("convert(%+v, %q) = %#v, %v; want %#v", tc.f, tc.in, got, err, tc.want)
		}
	}
}

func TestQuestionNamesTitleTypeAndChoices(t *testing.T) {
	f := Field{Name: "color", Title: "Colour", Description: "the colour\nof the thing", Type: "string", Required: true, Enum: []string{"red", "blue"}}
	if got, want := question(f), "  Colour [color], the colour … (string; required; one of red, blue): "; got != want {
		t.Errorf("question = %q, want %q", got, want)
	}
	if got, want := question(Field{Name: "x"}), "  x: "; got != want {
		t.Errorf("question = %q, want %q", got, want)
	}
}
