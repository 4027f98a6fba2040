package upstream

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// quickSchemaCases are schemas the quick check compiles, each with
// arguments it must accept and arguments it must refuse.
var quickSchemaCases = []struct {
	schema         string
	accept, refuse []string
}{
	{`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}`,
		[]string{`{"text":"hi"}`, `{"text":"","more":1}`},
		[]string{`{}`, `{"text":1}`, `{"text":null}`, `{"other":"x"}`}},
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
	  "properties":{"n":{"type":"integer"},"x":{"type":["number","null"]},"b":{"type":"boolean","default":true}}}`,
		[]string{`{}`, `{"n":3}`, `{"n":3.0,"x":0.5}`, `{"x":null,"b":false}`, `{"n":-0}`, `{"n":1e300}`},
		[]string{`{"n":3.5}`, `{"n":"3"}`, `{"x":"1"}`, `{"b":1}`, `{"extra":1}`}},
	{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"o":{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]}}}`,
		[]string{`{"tags":[]}`, `{"tags":["a","b"]}`, `{"o":{"k":1}}`, `{"o":{"k":2,"z":[]}}`},
		[]string{`{"tags":["a",1]}`, `{"tags":"a"}`, `{"o":{}}`, `{"o":{"k":1.5}}`, `{"o":[]}`}},
	{`{"type":"object"}`,
		[]string{`{}`, `{"any":[1,{"x":null}]}`}, nil},
	{`{"properties":{"a":{}}}`,
		[]string{`{}`, `{"a":null}`, `{"a":[1]}`}, nil},
}

// The quick check accepts exactly what the validator accepts for the
// schemas it compiles.
func TestQuickSchemaAgreesWithTheValidator(t *testing.T) {
	for _, c := range quickSchemaCases {
		q, rs := compileBoth(t, c.schema)
		if q == nil {
			t.Fatalf("%s: not compiled", c.schema)
		}
		for _, list := range [][]string{c.accept, c.refuse} {
			for _, a := range list {
				var args any
				if err := json.Unmarshal([]byte(a), &args); err != nil {
					t.Fatal(err)
				}
				quick, valid := q.accepts(args), rs.Validate(args) == nil
				if quick != valid {
					t.Errorf("%s with %s: quick %v, validator %v", c.schema, a, quick, valid)
				}
				if want := &list[0] == &c.accept[0]; quick != want {
					t.Errorf("%s with %s: quick %v, want %v", c.schema, a, quick, want)
				}
			}
		}
	}
}

// A schema with a keyword outside the quick check's part is left to the
// validator, whole.
func TestQuickSchemaLeavesOtherKeywordsToTheValidator(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"s":{"type":"string","minLength":2}}}`,
		`{"type":"object","properties":{"s":{"enum":["a","b"]}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"s":{"type":"string","format":"email"}}}`,
		`{"type":"object","items":[{"type":"string"}]}`,
		`{"type":"object","required":[1]}`,
		`{"type":"text"}`,
		`{"type":[]}`,
		`{"type":"object","properties":{"s":true}}`,
		`{"anyOf":[{"type":"object"}]}`,
		`{"$schema":"0"}`,
		`{"type":"object","properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`,
	} {
		var schema any
		if err := json.Unmarshal([]byte(s), &schema); err != nil {
			t.Fatal(err)
		}
		if q, ok := compileQuick(schema); ok {
			t.Errorf("%s compiled to %+v; it has a keyword the quick check does not know", s, q)
		}
	}
}

// Arguments the quick check refuses are refused by the validator, which
// names what is wrong, as before the quick check existed.
func TestQuickSchemaRefusalKeepsTheValidatorsMessage(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(quickSchemaCases[0].schema), &schema); err != nil {
		t.Fatal(err)
	}
	c := catalog{tools: []*mcp.Tool{{Name: "echo", InputSchema: schema}}, schemas: &schemaCache{}}
	err := c.validate("s", "echo", map[string]any{"text": 1.0})
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Field != "text" || ae.Message != `type: 1 has type "integer", want "string"` {
		t.Fatalf("validate = %v, want an ArgumentError naming text", err)
	}
	if err := c.validate("s", "echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatalf("validate = %v, want nil", err)
	}
	if s := c.schemas.resolve(c.tools[0]); s == nil || s.quick == nil {
		t.Fatal("the echo schema was not compiled for the quick check")
	}
}

// FuzzQuickSchema: for any schema the quick check compiles and the
// validator resolves, the quick check accepts only arguments the validator
// accepts.
func FuzzQuickSchema(f *testing.F) {
	for _, c := range quickSchemaCases {
		for _, a := range append(c.accept, c.refuse...) {
			f.Add(c.schema, a)
		}
	}
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON string) {
		var schema, args any
		if json.Unmarshal([]byte(schemaJSON), &schema) != nil || json.Unmarshal([]byte(argsJSON), &args) != nil {
			return
		}
		q, ok := compileQuick(schema)
		if !ok {
			return
		}
		var js jsonschema.Schema
		if json.Unmarshal([]byte(schemaJSON), &js) != nil {
			return
		}
		rs, err := js.Resolve(nil)
		if err != nil {
			return
		}
		if quick, valid := q.accepts(args), rs.Validate(args) == nil; quick && !valid {
			t.Fatalf("schema %s, arguments %s: the quick check accepts, the validator refuses: %v", schemaJSON, argsJSON, rs.Validate(args))
		}
	})
}

// compileBoth compiles schema for the quick check and the validator.
func compileBoth(t *testing.T, schema string) (*quickSchema, *jsonschema.Resolved) {
	t.Helper()
	var decoded any
	var js jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &decoded); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(schema), &js); err != nil {
		t.Fatal(err)
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	q, _ := compileQuick(decoded)
	return q, rs
}

// A schema of a draft the validator does not know does not block calls
// (it refused every one): the server checks its arguments itself.
func TestSchemaOfAnUnknownDraftIsNotChecked(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"text":{"type":"string"}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	c := catalog{tools: []*mcp.Tool{{Name: "echo", InputSchema: schema}}, schemas: &schemaCache{}}
	if err := c.validate("s", "echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatalf("validate = %v, want nil", err)
	}
}
