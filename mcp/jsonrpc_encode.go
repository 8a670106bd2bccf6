package mcp

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// appendContent appends one content item.
func appendContent(b []byte, c *Content) []byte {
	b = append(b, `{"type":`...)
	b = jsonraw.AppendString(b, c.Type)
	if c.Text != "" || c.Type == "text" {
		b = append(b, `,"text":`...)
		b = jsonraw.AppendString(b, c.Text)
	}
	if c.Data != "" || c.Type == "image" || c.Type == "audio" {
		b = append(b, `,"data":`...)
		b = jsonraw.AppendString(b, c.Data)
	}
	if c.MimeType != "" {
		b = append(b, `,"mimeType":`...)
		b = jsonraw.AppendString(b, c.MimeType)
	}
	if c.Resource != nil {
		r := c.Resource
		b = append(b, `,"resource":{"uri":`...)
		b = jsonraw.AppendString(b, r.URI)
		if r.MimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonraw.AppendString(b, r.MimeType)
		}
		// An empty resource is text or blob by its MIME type: MCP needs
		// one of the two members, and the official filesystem server sends
		// "blob":"" for an empty application/octet-stream file.
		emptyText := r.Text == "" && r.Blob == "" && strings.HasPrefix(r.MimeType, "text/")
		if r.Text != "" || emptyText {
			b = append(b, `,"text":`...)
			b = jsonraw.AppendString(b, r.Text)
		}
		if r.Blob != "" || (r.Text == "" && !emptyText) {
			b = append(b, `,"blob":`...)
			b = jsonraw.AppendString(b, r.Blob)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendCallToolResult appends a tools/call result. structuredContent of
// the usual shapes is written by hand; anything else goes through
// encoding/json (without HTML escaping).
func appendCallToolResult(b []byte, r *CallToolResult) ([]byte, error) {
	b = append(b, `{"content":[`...)
	// Where the first text item's escaped text lands in b: TextResult
	// mirrors it in structuredContent, which then reuses the bytes.
	textStart, textEnd := -1, -1
	for i := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		c := &r.Content[i]
		if i == 0 && c.Type == "text" && c.Data == "" && c.MimeType == "" && c.Resource == nil {
			b = append(b, `{"type":"text","text":`...)
			textStart = len(b)
			b = jsonraw.AppendString(b, c.Text)
			textEnd = len(b)
			b = append(b, '}')
			continue
		}
		b = appendContent(b, c)
	}
	b = append(b, ']')
	if r.StructuredContent != nil {
		b = append(b, `,"structuredContent":`...)
		var err error
		if b, err = appendStructured(b, r, textStart, textEnd); err != nil {
			return nil, err
		}
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

// appendStructured appends r.StructuredContent, copying the escaped text
// at b[textStart:textEnd] when it is TextResult's {"content": text}.
func appendStructured(b []byte, r *CallToolResult, textStart, textEnd int) ([]byte, error) {
	if m, ok := r.StructuredContent.(map[string]string); ok && len(m) == 1 && textStart >= 0 {
		if v, ok := m["content"]; ok && v == r.Content[0].Text {
			b = append(b, `{"content":`...)
			b = append(b, b[textStart:textEnd]...)
			return append(b, '}'), nil
		}
	}
	return appendAny(b, r.StructuredContent)
}

// appendAny appends v as JSON, by hand for strings and string maps.
func appendAny(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return jsonraw.AppendString(b, v), nil
	case json.RawMessage:
		if len(v) == 0 {
			return append(b, "null"...), nil
		}
		return append(b, v...), nil
	case map[string]string:
		if len(v) == 1 {
			for k, s := range v {
				b = append(b, '{')
				b = jsonraw.AppendString(b, k)
				b = append(b, ':')
				b = jsonraw.AppendString(b, s)
				return append(b, '}'), nil
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonraw.AppendString(b, k)
			b = append(b, ':')
			b = jsonraw.AppendString(b, v[k])
		}
		return append(b, '}'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...), nil
}
