package daemon

import "strings"

// route names the part of the daemon a request was sent to: the route
// label of the HTTP metrics and the "route" of audit records. It is a
// fixed set, so that no client can grow the number of series with paths
// of its own.
type route uint8

const (
	routeOther route = iota // anything else (answered 404)
	routeHealth
	routeMetrics
	routeMCP
	routeSSH
	routeRoot // GET /
	routeV1FS
	routeV1ACP
	routeV1Agents
	routeV1Config
	routeV1Other // /v1/health and anything else under /v1/
	routeSFTP    // the SFTP subsystem of an /ssh connection (audit records only)
	numRoutes
)

var routeNames = [numRoutes]string{
	routeOther: "other", routeHealth: "health", routeMetrics: "metrics", routeMCP: "mcp", routeSSH: "ssh",
	routeRoot: "root", routeV1FS: "v1_fs", routeV1ACP: "v1_acp", routeV1Agents: "v1_agents",
	routeV1Config: "v1_config", routeV1Other: "v1_other", routeSFTP: "sftp",
}

func (r route) String() string { return routeNames[r] }

// routeOf maps a request path to its route.
func routeOf(p string) route {
	switch p {
	case "/health":
		return routeHealth
	case "/metrics":
		return routeMetrics
	case "/mcp":
		return routeMCP
	case "/ssh":
		return routeSSH
	case "/":
		return routeRoot
	}
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return routeOther
	}
	seg, _, _ := strings.Cut(rest, "/")
	switch seg {
	case "fs":
		return routeV1FS
	case "acp":
		return routeV1ACP
	case "agents":
		return routeV1Agents
	case "config":
		return routeV1Config
	}
	return routeV1Other
}
