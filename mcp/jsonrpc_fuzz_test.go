package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeReference is the straightforward encoding/json decoder the fast
// scanner in DecodeMessage must agree with.
func decodeReference(data []byte) (*Message, error) {
	var w struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *RPCError       `json:"error"`
	}
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, ErrParse
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, ErrInvalidMessage
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return &Message{ID: idOf(data)}, ErrInvalidMessage
	}
	m := &Message{ID: w.ID, Params: w.Params, Result: w.Result, Error: w.Error}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return m, ErrInvalidMessage
	}
	if w.Method != nil {
		m.Method = *w.Method
		if m.Method == "" {
			return m, ErrInvalidMessage
		}
		if len(w.Params) > 0 && w.Params[0] != '{' && w.Params[0] != '[' && string(w.Params) != "null" {
			return m, ErrInvalidMessage
		}
		if w.Result != nil || w.Error != nil {
			return m, ErrInvalidMessage
		}
		return m, nil
	}
	if w.ID == nil || (w.Result == nil) == (w.Error == nil) {
		return m, ErrInvalidMessage
	}
	return m, nil
}

// comparable reports whether encoding/json and the scanner must agree on
// data: encoding/json folds member-name case (and some Unicode), the SDK
// and the scanner do not.
func comparableInput(data []byte) bool {
	for _, c := range data {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	lower := strings.ToLower(string(data))
	for _, k := range []string{`"jsonrpc"`, `"id"`, `"method"`, `"params"`, `"result"`, `"error"`, `"code"`, `"message"`, `"data"`} {
		if strings.Count(lower, k) != strings.Count(string(data), k) {
			return false
		}
	}
	return true
}

func TestDecodeMatchesReference(t *testing.T) {
	for _, s := range append(fuzzSeeds,
		`{"jsonrpc":"2.0","method":null,"id":1,"result":2}`, `{"jsonrpc":null,"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":null,"result":null}`, `{"jsonrpc":2,"id":1,"method":"x"}`,
		` { "jsonrpc" : "2.0" , "id" : [ 1 , "}" ] , "method" : "m\"x" , "params" : { "a" : "]" } } `) {
		checkAgainstReference(t, []byte(s))
	}
}

func checkAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := DecodeMessage(data)
	want, werr := decodeReference(data)
	if (gerr == nil) != (werr == nil) || errors.Is(gerr, ErrParse) != errors.Is(werr, ErrParse) {
		t.Fatalf("%q: err %v, reference %v", data, gerr, werr)
	}
	if gerr == nil {
		want.validated = got.validated
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %+v\n want %+v", data, got, want)
	}
	if gerr != nil && got != nil && want != nil && !bytes.Equal(got.ID, want.ID) {
		t.Fatalf("%q: error id %s, reference %s", data, got.ID, want.ID)
	}
}

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"panic"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
	`{"jsonrpc":"2.0","id":4,"result":{}}`,
	`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"m"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
	`[]`, `[1,2]`, `null`, `"s"`, `{`, `{"id":{"a":[1,{}]},"jsonrpc":"2.0","method":"tools/list"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\x00\"}}}",
}

// FuzzDecodeMessage: the decoder never panics, and whatever it accepts is
// a well-formed message of exactly one kind.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if comparableInput(data) {
			checkAgainstReference(t, data)
		}
		m, err := DecodeMessage(data)
		if err != nil {
			return
		}
		kinds := 0
		for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("message %q has %d kinds", data, kinds)
		}
		if m.ID != nil && !json.Valid(m.ID) {
			t.Fatalf("invalid id %q", m.ID)
		}
		if m.IsRequest() || m.IsNotification() {
			enc, err := EncodeRequest(m.ID, m.Method, m.Params)
			if err != nil {
				return
			}
			m2, err := DecodeMessage(enc)
			if err != nil || m2.Method != m.Method || !bytes.Equal(m2.ID, m.ID) {
				t.Fatalf("re-encode of %q gave %q (%v)", data, enc, err)
			}
		}
	})
}

// FuzzServerHandleBytes: random bytes never panic the dispatcher, and the
// answer is nil or valid JSON.
func FuzzServerHandleBytes(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	s := protoServer()
	f.Fuzz(func(t *testing.T, data []byte) {
		out := s.HandleBytes(context.Background(), data)
		if out != nil && !json.Valid(out) {
			t.Fatalf("invalid JSON answer %q for %q", out, data)
		}
	})
}

// FuzzReadSSEResponse: the client's event-stream parser never panics and
// only returns a response with the requested id.
func FuzzReadSSEResponse(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\r\n\r\n"))
	f.Add([]byte(": c\n\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := readSSEResponse(bytes.NewReader(data), json.RawMessage("1"))
		if err != nil {
			return
		}
		m, derr := DecodeMessage(out)
		if derr != nil || !m.IsResponse() || idKey(m.ID) != "1" {
			t.Fatalf("returned %q (%v)", out, derr)
		}
	})
}
