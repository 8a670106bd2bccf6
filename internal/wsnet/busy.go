package wsnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrBusy is matched (errors.Is) by the error of an upgrade the server
// answered with 503 Service Unavailable: it is up but full for now, which a
// caller should treat as "try again later", not as the server being gone.
var ErrBusy = errors.New("websocket: server busy")

// BusyError is the error of an upgrade answered with 503.
type BusyError struct {
	// RetryAfter is the server's Retry-After (delay-seconds or an HTTP
	// date, as a duration from when the answer was read); 0 when absent or
	// unparsable.
	RetryAfter time.Duration
	// Message is the server's explanation: the "message" of a JSON body, or
	// the body's text, cut to maxBusyMessage bytes; "" when empty.
	Message string
}

func (e *BusyError) Error() string {
	s := "websocket: server busy (HTTP 503)"
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf("; retry after %v", e.RetryAfter)
	}
	return s
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// IsBusy reports whether err is the server answering that it is full.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// maxBusyBody bounds what is read of a 503's body; maxBusyMessage what of
// it is kept.
const (
	maxBusyBody    = 4 << 10
	maxBusyMessage = 256
)

// busyError reads the 503 answer resp (at most maxBusyBody of its body).
func busyError(resp *http.Response, now time.Time) *BusyError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBusyBody))
	msg := strings.TrimSpace(string(body))
	var j struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &j) == nil && j.Message != "" {
		msg = j.Message
	}
	return &BusyError{RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now), Message: printable(msg)}
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// printable makes s valid UTF-8, cuts it to maxBusyMessage bytes on a rune boundary and replaces
// control characters, so a server's text cannot forge lines in a log.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxBusyMessage {
		cut := maxBusyMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
