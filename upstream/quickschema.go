package upstream

import "math"

// quickSchema checks arguments against the part of JSON Schema that most
// tools' input schemas are written in: type, properties, required,
// additionalProperties: false, items, and keywords that only annotate.
// It accepts exactly what the validator (jsonschema-go) accepts for such a
// schema (FuzzQuickSchema holds it to that), without the validator's
// allocations: it took 17 of every relayed call's. A schema with any other
// keyword is not compiled (the validator checks every call), and arguments
// it refuses go to the validator too, whose message names what is wrong.
type quickSchema struct {
	types    jsonTypes // the types allowed; 0: any
	props    map[string]*quickSchema
	required []string
	closed   bool         // additionalProperties: false
	items    *quickSchema // every item of an array, if set
}

// jsonTypes is a set of JSON Schema's types.
type jsonTypes uint8

const (
	typeNull jsonTypes = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeNames = map[string]jsonTypes{"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString}

// annotations are the keywords that do not take part in validation.
var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "readOnly": true, "writeOnly": true, "deprecated": true}

// compileQuick compiles a schema, decoded as encoding/json decodes into an
// any, if it keeps to quickSchema's keywords.
func compileQuick(schema any) (*quickSchema, bool) {
	return compileSubschema(schema, true)
}

// drafts are the values of $schema the validator validates with (it
// refuses every instance under any other).
var drafts = map[string]bool{"http://json-schema.org/draft-07/schema#": true, "https://json-schema.org/draft-07/schema#": true,
	"https://json-schema.org/draft/2020-12/schema": true}

func compileSubschema(schema any, root bool) (*quickSchema, bool) {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil, false
	}
	q := &quickSchema{}
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "$schema":
			// The draft, at the root: the keywords compiled mean the same
			// in each draft the validator knows.
			if draft, _ := v.(string); !root || !drafts[draft] {
				return nil, false
			}
		case k == "type":
			if q.types, ok = compileTypes(v); !ok {
				return nil, false
			}
		case k == "properties":
			props, isMap := v.(map[string]any)
			if !isMap {
				return nil, false
			}
			q.props = make(map[string]*quickSchema, len(props))
			for name, ps := range props {
				if q.props[name], ok = compileSubschema(ps, false); !ok {
					return nil, false
				}
			}
		case k == "required":
			list, isList := v.([]any)
			if !isList {
				return nil, false
			}
			for _, r := range list {
				name, isString := r.(string)
				if !isString {
					return nil, false
				}
				q.required = append(q.required, name)
			}
		case k == "additionalProperties":
			closed, isBool := v.(bool)
			if !isBool {
				return nil, false
			}
			q.closed = !closed
		case k == "items":
			if q.items, ok = compileSubschema(v, false); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return q, true
}

// compileTypes reads the value of a type keyword: a name or a list of them.
func compileTypes(v any) (jsonTypes, bool) {
	names, isList := v.([]any)
	if !isList {
		names = []any{v}
	}
	var t jsonTypes
	for _, n := range names {
		s, _ := n.(string)
		bit, ok := typeNames[s]
		if !ok {
			return 0, false
		}
		t |= bit
	}
	return t, t != 0
}

// accepts reports whether v, decoded as encoding/json decodes into an any,
// satisfies q.
func (q *quickSchema) accepts(v any) bool {
	if t := typesOf(v); t == 0 || q.types != 0 && q.types&t == 0 {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range q.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, x := range v {
			p := q.props[name]
			if p == nil && q.closed || p != nil && !p.accepts(x) {
				return false
			}
		}
	case []any:
		if q.items != nil {
			for _, x := range v {
				if !q.items.accepts(x) {
					return false
				}
			}
		}
	}
	return true
}

// typesOf is the set of types v has: a number without a fraction is both
// a number and an integer, as the validator counts it.
func typesOf(v any) jsonTypes {
	switch v := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return typeNumber | typeInteger
		}
		return typeNumber
	case map[string]any:
		return typeObject
	case []any:
		return typeArray
	}
	return 0 // not what decoding JSON gives: left to the validator
}
