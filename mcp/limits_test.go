package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// bigServer offers two tools with large results: huge (9 MiB of text) and
// text100k (100 KiB of text, carried twice: about 200 KiB encoded).
func bigServer(opts ServerOptions) *Server {
	return testServer(Implementation{Name: "t", Version: "1"}, opts,
		testTool{Tool{Name: "huge", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage) (*CallToolResult, error) {
			return TextResult(strings.Repeat("h", 9<<20)), nil
		}},
		testTool{Tool{Name: "text100k", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage) (*CallToolResult, error) {
			return TextResult(strings.Repeat("a", 100<<10)), nil
		}})
}

// callRaw sends one tools/call through s and returns the response bytes and
// its decoded result.
func callRaw(t *testing.T, s *Server, tool string, args any) ([]byte, CallToolResult) {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	req := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + string(params) + `}`)
	resp := s.HandleBytes(context.Background(), req)
	var m struct {
		Result CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: response is not JSON: %v", tool, err)
	}
	return resp, m.Result
}

// TestServerRefusesOversizedResponses: the Server's last check replaces a
// response over the message limit, whatever produced it: a tool result
// becomes an error result, a batch too large as a whole has its largest
// responses replaced, an id too large to echo gets id null.
func TestServerRefusesOversizedResponses(t *testing.T) {
	for _, limit := range []int{0, 100 << 10} {
		s := bigServer(ServerOptions{MaxMessageBytes: limit})
		l := s.opts.MessageLimit()
		resp, res := callRaw(t, s, "huge", map[string]any{})
		if !res.IsError || len(resp) > l || !strings.HasPrefix(res.Content[0].Text, "Result too large: the result of tool huge is ") ||
			!strings.Contains(res.Content[0].Text, strconv.Itoa(l)) {
			t.Errorf("limit %d: %d bytes, %q", limit, len(resp), res.Content[0].Text)
		}
		if !bytes.HasPrefix(resp, []byte(`{"jsonrpc":"2.0","id":7,`)) {
			t.Errorf("limit %d: id lost: %.60s", limit, resp)
		}
	}
	// An id as large as the limit cannot be echoed.
	s := bigServer(ServerOptions{MaxMessageBytes: 64 << 10})
	id := `"` + strings.Repeat("i", 70<<10) + `"`
	resp := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
	if len(resp) > 64<<10 || !bytes.Contains(resp, []byte(`"id":null`)) || !bytes.Contains(resp, []byte(`"code":-32603`)) {
		t.Errorf("huge id: %.200s", resp)
	}
	// A batch of results that fit one by one but not together, over stdio
	// (HandleBytes) and over HTTP.
	s = bigServer(ServerOptions{MaxMessageBytes: 256 << 10})
	var batch []string
	for i := 0; i < 4; i++ {
		batch = append(batch, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{"name":"text100k"}}`)
	}
	batch = append(batch, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	body := "[" + strings.Join(batch, ",") + "]"
	checkBatch(t, "stdio", s.HandleBytes(context.Background(), []byte(body)))
	ts := httptest.NewServer(NewHTTPHandler(func(r *http.Request) (*Server, func(), error) { return s, nil, nil }, HTTPOptions{}))
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	resp, _ = io.ReadAll(r.Body)
	checkBatch(t, "http", resp)
}

// checkBatch checks the answer to limit test's batch: four 200 KiB results
// and a ping under a 256 KiB limit keep one result and the ping.
func checkBatch(t *testing.T, label string, resp []byte) {
	t.Helper()
	var out []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct{ Code int }
	}
	if err := json.Unmarshal(resp, &out); err != nil || len(resp) > 256<<10 || len(out) != 5 {
		t.Fatalf("%s batch: %v, %d bytes, %d responses", label, err, len(resp), len(out))
	}
	kept, replaced := 0, 0
	for i, r := range out {
		switch {
		case r.ID != []int{0, 1, 2, 3, 9}[i]:
			t.Errorf("%s: response %d has id %d", label, i, r.ID)
		case r.Error != nil && r.Error.Code == CodeInternalError:
			replaced++
		case r.Result != nil:
			kept++
		}
	}
	if kept != 2 || replaced != 3 {
		t.Errorf("%s batch: %d kept, %d replaced", label, kept, replaced)
	}
}
