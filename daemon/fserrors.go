package daemon

import (
	"errors"
	"io/fs"
	"net/http"

	agentbe "github.com/agentbe/agent-backend"
)

// errStatus is the status and problem title of errors that wrap target.
type errStatus struct {
	target error
	status int
	title  string
}

// fsErrStatus maps an error of a /v1/fs route to its status and title: a
// path escape is 403 and a missing path 404 on every route, then the
// route's own rules in order. Anything else is 500 with fallback as its title, and known is false.
func fsErrStatus(err error, fallback string, rules ...errStatus) (status int, title string, known bool) {
	all := append([]errStatus{
		{agentbe.ErrPathEscape, http.StatusForbidden, "Path escape"},
		{fs.ErrNotExist, http.StatusNotFound, "Not Found"},
	}, rules...)
	for _, r := range all {
		if errors.Is(err, r.target) {
			return r.status, r.title, true
		}
	}
	return http.StatusInternalServerError, fallback, false
}
