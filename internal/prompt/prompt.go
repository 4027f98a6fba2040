// Package prompt asks a person at a terminal for what a server elicits
// during a tool call: one question per field of the requested JSON
// schema, each answer converted to the field's type. It also reads the
// fields of an object schema for display (a tool's arguments).
package prompt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	sb "github.com/switchboard-mcp/switchboard"
)

// Field is one property of an object JSON schema: a tool argument or an
// elicitation field.
type Field struct {
	Name        string
	Type        string // "string", "number", "integer", "boolean", ... or ""
	Title       string
	Description string
	Enum        []string
	Default     json.RawMessage
	Required    bool
}

// Fields returns the properties of an object schema in the order the
// schema lists them; none for an empty or null schema.
func Fields(schema json.RawMessage) ([]Field, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
		return nil, nil
	}
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, err
	}
	if len(top.Properties) == 0 || string(top.Properties) == "null" {
		return nil, nil
	}
	// Decoded token by token: a map would lose the schema's order, which
	// is the order a person expects the questions in.
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("properties is not an object")
	}
	var fields []Field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var p struct {
			Type        any               `json:"type"`
			Title       string            `json:"title"`
			Description string            `json:"description"`
			Enum        []json.RawMessage `json:"enum"`
			Default     json.RawMessage   `json:"default"`
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		f := Field{Name: name, Title: p.Title, Description: p.Description, Default: p.Default,
			Required: slices.Contains(top.Required, name)}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any: // ["string", "null"]: the first non-null type
			for _, v := range t {
				if s, ok := v.(string); ok && s != "null" {
					f.Type = s
					break
				}
			}
		}
		for _, e := range p.Enum {
			var s string
			if json.Unmarshal(e, &s) != nil {
				s = string(e)
			}
			f.Enum = append(f.Enum, s)
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// Elicit asks the questions of req on out and reads the answers from in,
// one line each: for a form, each field of the requested schema; for a
// URL, whether the person has opened it. An empty answer to a required
// field, or to every field, declines; an answer that does not fit its
// field is asked again. Only a failure to read in is an error.
func Elicit(in *bufio.Reader, out io.Writer, req *sb.ElicitationRequest) (sb.ElicitationResponse, error) {
	decline := sb.ElicitationResponse{Action: "decline"}
	readLine := func() (string, error) {
		line, err := in.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				return "", nil // end of input: an empty answer
			}
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		return strings.TrimSpace(line), nil
	}

	fmt.Fprintf(out, "The server asks: %s\n", req.Message)
	if req.Mode == "url" {
		fmt.Fprintf(out, "Open %s\nthen press Enter to accept (or type n to decline): ", req.URL)
		line, err := readLine()
		if err != nil {
			return decline, err
		}
		if l := strings.ToLower(line); l == "n" || l == "no" {
			return decline, nil
		}
		return sb.ElicitationResponse{Action: "accept"}, nil
	}
	fields, err := Fields(req.RequestedSchema)
	if err != nil {
		fmt.Fprintf(out, "(the requested schema is unreadable: %v; declining)\n", err)
		return decline, nil
	}
	if len(fields) == 0 {
		fmt.Fprint(out, "Press Enter to decline, or type y to accept: ")
		line, err := readLine()
		if err != nil {
			return decline, err
		}
		if l := strings.ToLower(line); l == "y" || l == "yes" {
			return sb.ElicitationResponse{Action: "accept", Content: map[string]any{}}, nil
		}
		return decline, nil
	}
	fmt.Fprintln(out, "(an empty answer to a required field declines)")
	content := map[string]any{}
	for _, f := range fields {
		for {
			fmt.Fprint(out, question(f))
			line, err := readLine()
			if err != nil {
				return decline, err
			}
			if line == "" {
				if f.Required {
					return decline, nil
				}
				break
			}
			v, err := convert(f, line)
			if err != nil {
				fmt.Fprintf(out, "  %v\n", err)
				continue
			}
			content[f.Name] = v
			break
		}
	}
	if len(content) == 0 {
		return decline, nil
	}
	return sb.ElicitationResponse{Action: "accept", Content: content}, nil
}

// question is the question for one field, e.g.
// "  answer, your answer (string; required): ".
func question(f Field) string {
	label := f.Name
	if f.Title != "" && f.Title != f.Name {
		label = f.Title + " [" + f.Name + "]"
	}
	var notes []string
	if f.Type != "" {
		notes = append(notes, f.Type)
	}
	if f.Required {
		notes = append(notes, "required")
	}
	if len(f.Enum) > 0 {
		notes = append(notes, "one of "+strings.Join(f.Enum, ", "))
	}
	s := "  " + label
	if f.Description != "" {
		s += ", " + FirstLine(f.Description, 80)
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s + ": "
}

// convert converts typed text to the field's JSON type.
func convert(f Field, text string) (any, error) {
	if len(f.Enum) > 0 && f.Type != "array" && !slices.Contains(f.Enum, text) {
		return nil, fmt.Errorf("want one of %s", strings.Join(f.Enum, ", "))
	}
	switch f.Type {
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		return n, nil
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("want yes or no")
	case "array":
		parts := strings.Split(text, ",")
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return text, nil
}

// FirstLine returns the first line of s, cut to at most n runes with "…"
// when it was longer (or had more lines): for one-line table cells and
// prompts.
func FirstLine(s string, n int) string {
	line, rest, multi := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > n {
		r := []rune(line)
		return string(r[:n-1]) + "…"
	}
	if multi && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}
