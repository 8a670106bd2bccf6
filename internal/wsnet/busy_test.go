package wsnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// TestDialBusy: an upgrade answered 503 is the server being full, not
// refusing or gone: the error says so, carries Retry-After (seconds or an
// HTTP date) and the body's message, and is neither unauthorized nor a
// plain refusal.
func TestDialBusy(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name, retryAfter, body string
		wantAfter              time.Duration // lower bound; 0: none
		wantMsg                string
	}{
		{"seconds", "3", `{"error":"Service Unavailable","message":"daemon full: 64 SSH connections"}`, 3 * time.Second, "daemon full: 64 SSH connections"},
		{"date", date, `busy`, 80 * time.Second, "busy"},
		{"none", "", ``, 0, ""},
		{"garbage", "soon", `{"message":"x"}`, 0, "x"},
		{"negative", "-5", ``, 0, ""},
		{"huge body", "1", strings.Repeat("y", 100<<10), time.Second, strings.Repeat("y", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Dial(ctx, wsURL(srv, "/ssh"), DialConfig{})
			if !errors.Is(err, ErrBusy) || IsUnauthorized(err) {
				t.Fatalf("503: %v", err)
			}
			var be *BusyError
			if !errors.As(err, &be) {
				t.Fatalf("no *BusyError in %v", err)
			}
			if tc.wantAfter == 0 && be.RetryAfter != 0 || be.RetryAfter < tc.wantAfter || be.RetryAfter > tc.wantAfter+15*time.Second {
				t.Errorf("RetryAfter %v, want about %v", be.RetryAfter, tc.wantAfter)
			}
			if !strings.HasPrefix(be.Message, tc.wantMsg) || len(be.Message) > 300 {
				t.Errorf("Message %q (len %d), want %q", be.Message, len(be.Message), tc.wantMsg)
			}
			if !strings.Contains(err.Error(), "503") {
				t.Errorf("error %q does not name the status", err)
			}
		})
	}
	// Other refusals are not busy.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	if _, err := Dial(context.Background(), wsURL(srv, "/"), DialConfig{}); err == nil || errors.Is(err, ErrBusy) {
		t.Errorf("502: %v", err)
	}
}

// FuzzBusyAnswer: whatever a 503 carries, the error's message is bounded,
// valid UTF-8 without control characters, and the delay is not negative.
func FuzzBusyAnswer(f *testing.F) {
	f.Add("1", []byte(`{"message":"daemon full"}`))
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", []byte("\xff\n\x1b[31m"))
	f.Add("99999999999", []byte(strings.Repeat("é", 300)))
	f.Fuzz(func(t *testing.T, after string, body []byte) {
		resp := &http.Response{Header: http.Header{"Retry-After": {after}},
			Body: io.NopCloser(bytes.NewReader(body))}
		be := busyError(resp, time.Now())
		if be.RetryAfter < 0 || len(be.Message) > maxBusyMessage ||
			!utf8.ValidString(be.Message) || strings.ContainsFunc(be.Message, unicode.IsControl) {
			t.Fatalf("%q %q -> %+v", after, body, be)
		}
	})
}
