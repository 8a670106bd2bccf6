package mcp

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like JSON.stringify it escapes
// only '"', '\\' and control characters; invalid UTF-8 becomes U+FFFD the
// way encoding/json does it, so the output is always valid JSON.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i += plainPrefix(bytesOf(s[i:]), true); i >= len(s) {
			break
		}
		c := s[i] // '"', '\\', a control byte or the start of a multi-byte rune
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendContent appends one content item.
func appendContent(b []byte, c *Content) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, c.Type)
	if c.Text != "" || c.Type == "text" {
		b = append(b, `,"text":`...)
		b = appendString(b, c.Text)
	}
	if c.Data != "" || c.Type == "image" || c.Type == "audio" {
		b = append(b, `,"data":`...)
		b = appendString(b, c.Data)
	}
	if c.MimeType != "" {
		b = append(b, `,"mimeType":`...)
		b = appendString(b, c.MimeType)
	}
	if c.Resource != nil {
		r := c.Resource
		b = append(b, `,"resource":{"uri":`...)
		b = appendString(b, r.URI)
		if r.MimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = appendString(b, r.MimeType)
		}
		// An empty resource is text or blob by its MIME type: MCP needs
		// one of the two members, and the official filesystem server sends
		// "blob":"" for an empty application/octet-stream file.
		emptyText := r.Text == "" && r.Blob == "" && strings.HasPrefix(r.MimeType, "text/")
		if r.Text != "" || emptyText {
			b = append(b, `,"text":`...)
			b = appendString(b, r.Text)
		}
		if r.Blob != "" || (r.Text == "" && !emptyText) {
			b = append(b, `,"blob":`...)
			b = appendString(b, r.Blob)
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
			b = appendString(b, c.Text)
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
		return appendString(b, v), nil
	case json.RawMessage:
		if len(v) == 0 {
			return append(b, "null"...), nil
		}
		return append(b, v...), nil
	case map[string]string:
		if len(v) == 1 {
			for k, s := range v {
				b = append(b, '{')
				b = appendString(b, k)
				b = append(b, ':')
				b = appendString(b, s)
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
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, v[k])
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

// bytesOf is s's bytes without a copy, for read-only scans.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
