package agentbe

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// mcpCall calls a tool of s and returns its text and isError.
func mcpCall(t *testing.T, s interface {
	HandleBytes(context.Context, []byte) []byte
}, tool string, args any) (string, bool) {
	t.Helper()
	a, _ := json.Marshal(args)
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(a) + `}}`
	var resp struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	raw := s.HandleBytes(context.Background(), []byte(req))
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Error != nil || len(resp.Result.Content) == 0 {
		t.Fatalf("%s: %s", tool, raw)
	}
	return resp.Result.Content[0].Text, resp.Result.IsError
}

func TestMCPProcessTools(t *testing.T) {
	l := ctLocal(t, LocalConfig{})
	plain := NewMCPServer(l)
	for _, tool := range plain.Tools() {
		if strings.HasPrefix(tool.Name, "process_") {
			t.Fatalf("process tools listed by default: %s", tool.Name)
		}
	}
	s := NewMCPServerWith(l, MCPServerOptions{Processes: true, MaxExecOutputBytes: 3000})
	names := ""
	for _, tool := range s.Tools() {
		names += tool.Name + " "
	}
	if !strings.HasSuffix(names, "exec grep process_start process_read process_write process_stop process_list ") {
		t.Errorf("tools: %s", names)
	}
	txt, isErr := mcpCall(t, s, "process_start", map[string]any{"command": "cat"})
	var st struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(txt), &st); isErr || st.Status != "running" || st.ID == "" {
		t.Fatalf("start: %s", txt)
	}
	if txt, isErr := mcpCall(t, s, "process_write", map[string]any{"id": st.ID, "input": "hello <&>\n"}); isErr || txt != `{"bytesWritten":10}` {
		t.Errorf("write: %s", txt)
	}
	txt, _ = mcpCall(t, s, "process_read", map[string]any{"id": st.ID, "waitMs": 10000})
	var rd struct {
		Status string `json:"status"`
		Output []struct {
			Seq    uint64 `json:"seq"`
			Stream string `json:"stream"`
			Text   string `json:"text"`
		} `json:"output"`
		Next      uint64 `json:"next"`
		Dropped   uint64 `json:"dropped"`
		Truncated bool   `json:"truncated"`
	}
	if json.Unmarshal([]byte(txt), &rd); len(rd.Output) != 1 || rd.Output[0].Text != "hello <&>\n" || rd.Next != 1 || rd.Status != "running" {
		t.Errorf("read: %s", txt)
	}
	if txt, _ := mcpCall(t, s, "process_list", map[string]any{}); !strings.Contains(txt, `"id":"`+st.ID+`"`) {
		t.Errorf("list: %s", txt)
	}
	txt, _ = mcpCall(t, s, "process_stop", map[string]any{"id": st.ID})
	if !strings.Contains(txt, `"status":"exited"`) {
		t.Errorf("stop: %s", txt)
	}
	if txt, isErr := mcpCall(t, s, "process_read", map[string]any{"id": "proc_999"}); !isErr || !strings.Contains(txt, "no process") {
		t.Errorf("unknown id: %s %v", txt, isErr)
	}
	if _, isErr := mcpCall(t, s, "process_start", map[string]any{"command": "rm -rf /"}); !isErr {
		t.Error("dangerous command started")
	}
	// A scope's server sees only the scope's processes.
	sc, _ := l.Scope("sub", ScopeOptions{})
	if txt, _ := mcpCall(t, NewMCPServerWith(sc, MCPServerOptions{Processes: true}), "process_list", map[string]any{}); txt != "[]" {
		t.Errorf("scope lists %s", txt)
	}
}

// TestMCPProcessReadBounded: a read of more output than the limit returns
// what fits, says so, and the next reads get the rest.
func TestMCPProcessReadBounded(t *testing.T) {
	l := ctLocal(t, LocalConfig{})
	s := NewMCPServerWith(l, MCPServerOptions{Processes: true, MaxExecOutputBytes: 3000})
	txt, _ := mcpCall(t, s, "process_start", map[string]any{"command": "head -c 20000 /dev/zero | tr '\\0' a"})
	var st struct{ ID string }
	json.Unmarshal([]byte(txt), &st)
	p, _ := l.Process(context.Background(), st.ID)
	p.Wait(context.Background())
	total, since := 0, uint64(0)
	for i := 0; i < 100; i++ {
		txt, isErr := mcpCall(t, s, "process_read", map[string]any{"id": st.ID, "since": since})
		if isErr || len(txt) > 3000 {
			t.Fatalf("read %d bytes (error %v)", len(txt), isErr)
		}
		var rd struct {
			Output []struct{ Text string } `json:"output"`
			Next   uint64                  `json:"next"`
			Trunc  bool                    `json:"truncated"`
		}
		json.Unmarshal([]byte(txt), &rd)
		for _, o := range rd.Output {
			total += len(o.Text)
		}
		if len(rd.Output) == 0 {
			break
		}
		since = rd.Next
	}
	if total == 0 {
		t.Error("nothing read")
	}
	t.Log("read " + strconv.Itoa(total) + " bytes in bounded parts")
}
