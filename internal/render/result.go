package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// ToolResult is the part of an MCP CallToolResult that is printed. It is
// decoded here rather than with the SDK's type so that a content kind this
// binary does not know yet is summarised, not an error.
type ToolResult struct {
	Content           []resultContent `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// resultContent is one content block of a tool result.
type resultContent struct {
	Type     string           `json:"type"`
	Text     string           `json:"text,omitempty"`
	Data     string           `json:"data,omitempty"` // base64
	MIMEType string           `json:"mimeType,omitempty"`
	URI      string           `json:"uri,omitempty"`
	Name     string           `json:"name,omitempty"`
	Resource *resourceContent `json:"resource,omitempty"`
}

// resourceContent is the resource of an embedded resource content.
type resourceContent struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"` // base64
}

// Result prints a tool result for a person, once: text contents
// as text, one per line, and other contents as a one-line summary. The
// structured content (JSON for programs) is printed, indented, only when
// no text content says anything: tools that return both give the same
// data twice (the spec has them repeat it as text for older clients, and
// SDKs write it there), so the text alone is printed. A text content that
// is the structured content's JSON is printed as the indented JSON.
func Result(out io.Writer, res *ToolResult) error {
	var structured any
	hasStructured := len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" &&
		json.Unmarshal(res.StructuredContent, &structured) == nil
	indented := func() string {
		var ind bytes.Buffer
		if json.Indent(&ind, res.StructuredContent, "", "  ") != nil {
			return string(res.StructuredContent)
		}
		return ind.String()
	}
	var b strings.Builder
	hasText := false
	for _, c := range res.Content {
		if c.Type == "text" {
			hasText = true
			if hasStructured && sameJSON(c.Text, structured) {
				b.WriteString(indented())
				b.WriteByte('\n')
				hasStructured = false // printed
				continue
			}
		}
		b.WriteString(describeContent(c))
		b.WriteByte('\n')
	}
	if hasStructured && !hasText {
		b.WriteString(indented())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// sameJSON reports whether text is JSON equal to v.
func sameJSON(text string, v any) bool {
	var t any
	return json.Unmarshal([]byte(text), &t) == nil && reflect.DeepEqual(t, v)
}

// describeContent returns a text content's text, or a one-line summary of
// any other content, e.g. "[image image/png, 8 bytes]".
func describeContent(c resultContent) string {
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return fmt.Sprintf("[%s %s, %s]", c.Type, OrDash(c.MIMEType), byteCount(base64Len(c.Data)))
	case "resource_link":
		s := "[resource link " + c.URI
		if c.Name != "" {
			s += " " + strconv.Quote(c.Name)
		}
		if c.MIMEType != "" {
			s += " " + c.MIMEType
		}
		return s + "]"
	case "resource":
		if c.Resource == nil {
			return "[resource]"
		}
		size := len(c.Resource.Text)
		if c.Resource.Blob != "" {
			size = base64Len(c.Resource.Blob)
		}
		return fmt.Sprintf("[resource %s %s, %s]", c.Resource.URI, OrDash(c.Resource.MIMEType), byteCount(size))
	}
	return fmt.Sprintf("[%s content]", OrDash(c.Type))
}

// base64Len is the decoded length of standard base64 data.
func base64Len(s string) int {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(b)
	}
	return base64.StdEncoding.DecodedLen(len(s))
}

func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}
