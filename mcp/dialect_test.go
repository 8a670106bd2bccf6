package mcp

import (
	"encoding/json"
	"testing"
)

// TestWithDialect: the 2026 era states 2020-12 on every schema: added when
// none is named, draft-07 restated when its meaning is unchanged, any
// other dialect (or a draft-07 schema using changed keywords) kept.
func TestWithDialect(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object"}`, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{`{"type":"object","required":["p"],"$schema":"http://json-schema.org/draft-07/schema#"}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["p"]}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, `{"$schema":"https://json-schema.org/draft/2020-12/schema"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`,
			`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`},
		{`{"$schema":"https://example.com/own","type":"object"}`, `{"$schema":"https://example.com/own","type":"object"}`},
		{`{"description":"a,,b","$schema":"http://json-schema.org/draft-07/schema#"}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","description":"a,,b"}`},
	} {
		got := string(withDialect(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("withDialect(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
