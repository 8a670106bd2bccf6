package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// healthBody is GET /health's response.
type healthBody struct {
	Status     string          `json:"status"`
	Version    string          `json:"version"`
	RootDir    string          `json:"rootDir"`
	Transports healthTransport `json:"transports"`
}

type healthTransport struct {
	MCP   bool `json:"mcp"`
	SSHWS bool `json:"ssh-ws"`
	SSH   bool `json:"ssh"`
}

// healthHandler answers GET (and HEAD) /health without authentication; the
// body is computed once, since nothing in it changes while serving.
func healthHandler(body healthBody) http.Handler {
	b, _ := json.Marshal(body)
	clen := strconv.Itoa(len(b))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{"Method Not Allowed", "Use GET /health"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", clen)
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
