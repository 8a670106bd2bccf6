package validate

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Expect is what the daemon's command line must say.
type Expect struct {
	// Isolation is the --isolation the operator asked for.
	Isolation string
	// HostKeyDefault is the daemon's default --ssh-host-key
	// (DaemonDefaults).
	HostKeyDefault string
}

// DaemonDefaults reads the daemon's default host key path from the
// daemon package's source (daemon/config.go under repo), so the check
// follows the code.
func DaemonDefaults(repo string) (hostKey string, err error) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repo, "daemon", "config.go"), nil, 0)
	if err != nil {
		return "", err
	}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if name.Name == "DefaultHostKeyPath" && i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					hostKey, _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	if hostKey == "" {
		return "", errors.New("daemon/config.go: no DefaultHostKeyPath string constant")
	}
	return hostKey, nil
}

// boolFlags are the daemon's flags that take no value.
var boolFlags = []string{"--local-only", "--disable-ssh-ws", "--conventional-ssh", "--allow-default-ssh-password"}

// parseFlags returns the daemon's flags, the last occurrence of each
// winning (as the daemon's parser does), and the order they came in.
func parseFlags(args []string) (map[string]string, error) {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("stray argument %q", a)
		}
		name, value, has := strings.Cut(a, "=")
		if slices.Contains(boolFlags, name) {
			flags[name] = "true"
			continue
		}
		if !has {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s has no value", name)
			}
			i++
			value = args[i]
		}
		flags[name] = value
	}
	return flags, nil
}

// location is where a container path lives: on which volume mount, and at
// which path inside the volume.
type location struct {
	mount  *corev1.VolumeMount // nil: the image's own filesystem
	inside string              // the path inside the volume
}

// locate finds the volume mount that holds p (the longest mount path that
// is p or a parent of it).
func locate(c corev1.Container, p string) location {
	p = path.Clean(p)
	var best location
	bestLen := -1
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > bestLen {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, mp), "/")
			best, bestLen = location{mount: m, inside: path.Join("/", m.SubPath, rel)}, len(mp)
		}
	}
	return best
}

// volumeKind is "claim", "secret", "emptyDir" or another kind's name.
func volumeKind(w Workload, name string) string {
	for _, t := range w.ClaimTemplates {
		if t.Name == name {
			return "claim"
		}
	}
	for _, v := range w.Pod.Spec.Volumes {
		if v.Name != name {
			continue
		}
		switch {
		case v.PersistentVolumeClaim != nil:
			return "claim"
		case v.Secret != nil:
			return "secret"
		case v.EmptyDir != nil:
			return "emptyDir"
		}
		return "other"
	}
	return "missing"
}

// within reports whether p is dir or below it (both clean, absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// CheckRun checks a simulated start of container c of w: the container
// reached the daemon through the image's entrypoint, as PID 1, with a
// command line that serves the persistent workspace on the container's
// http port, takes its token from a Secret file, keeps its host key on a
// persistent volume outside the workspace, and runs commands under the
// isolation asked for; and no secret is left in the daemon's environment.
func CheckRun(w Workload, c corev1.Container, img Image, run *Run, exp Expect) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if run.Stub == nil {
		fail("the container exits %d before it starts the daemon (a crash loop): argv %q\n%s", run.Exit, run.Argv, run.Output)
		return errs
	}
	if run.Exit != 0 {
		fail("the container exited %d:\n%s", run.Exit, run.Output)
	}
	if len(run.Argv) == 0 || run.Argv[0] != img.Entrypoint[0] {
		fail("the container runs %q, not the image's entrypoint %q: command replaces it, and the workspace preparation, /docker-entrypoint.d and the environment's flags are skipped",
			run.Argv, img.Entrypoint)
	}
	st := run.Stub
	if st.Pid != 1 {
		fail("the daemon runs as PID %d, not 1: the entrypoint did not exec it, so SIGTERM does not reach it", st.Pid)
	}
	if len(st.Argv) < 2 || path.Base(st.Argv[0]) != StubName || st.Argv[1] != "daemon" {
		fail("the daemon's argv is %q, not agent-backend daemon …", st.Argv)
		return errs
	}
	flags, err := parseFlags(st.Argv[2:])
	if err != nil {
		fail("the daemon's flags %q: %v", st.Argv[2:], err)
		return errs
	}
	for _, f := range []string{"--local-only", "--conventional-ssh", "--allow-default-ssh-password", "--auth-token", "--disable-ssh-ws"} {
		if _, ok := flags[f]; ok {
			fail("the daemon is given %s", f)
		}
	}
	if got := flags["--isolation"]; got != exp.Isolation {
		fail("the daemon's --isolation is %q, want %q", got, exp.Isolation)
	}
	root := flags["--rootDir"]
	wsLoc := locate(c, root)
	if root == "" || wsLoc.mount == nil || volumeKind(w, wsLoc.mount.Name) != "claim" {
		fail("the workspace --rootDir %q is not on a persistent volume claim", root)
	}
	if st.Cwd != root {
		fail("the daemon runs in %q, not in the workspace %q", st.Cwd, root)
	}
	port, perr := strconv.Atoi(flags["--port"])
	httpPort := containerPort(c, "http")
	if perr != nil || httpPort == 0 || port != httpPort {
		fail("the daemon listens on --port %q, the container's http port is %d", flags["--port"], httpPort)
	}
	tok := flags["--auth-token-file"]
	if tl := locate(c, tok); tok == "" || tl.mount == nil || volumeKind(w, tl.mount.Name) != "secret" {
		fail("the token (--auth-token-file %q) does not come from a Secret volume", tok)
	}
	key := flags["--ssh-host-key"]
	if key == "" {
		key = exp.HostKeyDefault
	}
	kl := locate(c, key)
	kind := ""
	if kl.mount != nil {
		kind = volumeKind(w, kl.mount.Name)
	}
	switch {
	case kl.mount == nil:
		fail("the SSH host key %s is on the container's own filesystem: a new key at every restart, which no client can pin", key)
	case kind != "claim" && kind != "secret":
		fail("the SSH host key %s is on a volume of kind %s, which does not outlive the pod: clients cannot pin it", key, kind)
	case wsLoc.mount != nil && kl.mount.Name == wsLoc.mount.Name && within(kl.inside, wsLoc.inside):
		fail("the SSH host key %s is inside the workspace, where tenants can read it", key)
	}
	for _, kv := range st.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "AUTH_TOKEN" || k == "AGENTBE_AUTH_TOKEN" || k == "SSH_USERS" {
			fail("the daemon's environment holds %s", k)
		}
	}
	return errs
}

// containerPort returns the number of c's port named name (0: none).
func containerPort(c corev1.Container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	return 0
}

// probePort resolves a probe's port (a number or a port's name).
func probePort(c corev1.Container, p intstr.IntOrString) int {
	if p.Type == intstr.String {
		return containerPort(c, p.StrVal)
	}
	return p.IntValue()
}

// Probes are the readiness and liveness probes the check wants: readiness
// asks whether the workspace and the isolation work, liveness only
// whether the daemon answers.
const (
	ReadinessPath = "/health?ready=1"
	LivenessPath  = "/health"
)

// CheckPod checks what the pod template must hold whatever runs in it:
// no API credentials or other services' addresses for agents' commands, a
// user namespace and an unmasked /proc for bwrap, no recursive chown at
// every start, replicas spread over nodes, a grace period longer than the
// daemon's shutdown, the probes, and resource limits.
func CheckPod(w Workload) []error {
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s/%s: "+format, append([]any{w.Kind, w.Name}, a...)...))
	}
	ps := w.Pod.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		fail("the service account token would be readable by agents' commands (automountServiceAccountToken)")
	}
	if ps.EnableServiceLinks == nil || *ps.EnableServiceLinks {
		fail("enableServiceLinks puts every service's address in the daemon's environment")
	}
	if ps.HostUsers == nil || *ps.HostUsers {
		fail("hostUsers: false is needed (root in the container is root on the node otherwise, and bwrap cannot mount /proc)")
	}
	if sc := ps.SecurityContext; sc != nil && sc.FSGroup != nil &&
		(sc.FSGroupChangePolicy == nil || *sc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch) {
		fail("fsGroup without fsGroupChangePolicy: OnRootMismatch changes the owner of every file of the workspace at every start")
	}
	spread := false
	for _, t := range ps.TopologySpreadConstraints {
		if t.TopologyKey == "kubernetes.io/hostname" && t.LabelSelector != nil && selects(t.LabelSelector.MatchLabels, w.Pod.Labels) {
			spread = true
		}
	}
	if !spread {
		fail("no topology spread constraint over kubernetes.io/hostname selecting the pods: replicas may share a node")
	}
	if ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds < 15 {
		fail("terminationGracePeriodSeconds must leave the daemon its 10 s of graceful shutdown")
	}
	if len(ps.Containers) != 1 {
		fail("one container expected, got %d", len(ps.Containers))
		return errs
	}
	c := ps.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount {
		fail("procMount: Unmasked is needed for bwrap to mount a /proc of its own")
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		fail("allowPrivilegeEscalation must be false")
	}
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"readiness", ReadinessPath, c.ReadinessProbe}, {"liveness", LivenessPath, c.LivenessProbe}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path ||
			probePort(c, p.probe.HTTPGet.Port) != containerPort(c, "http") || containerPort(c, "http") == 0 {
			fail("the %s probe must GET %s on the http port", p.name, p.path)
		}
	}
	if p := c.ReadinessProbe; p != nil && p.TimeoutSeconds < 6 {
		fail("the readiness probe's timeout must exceed the checks' 5 s")
	}
	if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		fail("no CPU or memory limit")
	}
	return errs
}

// selects reports whether every label of sel is in labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// CheckServe checks the real daemon's run in the simulated container: it
// became live and ready on the probes' paths, reported the isolation asked
// for, and exited 0 on SIGTERM.
func CheckServe(run *Run, exp Expect) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if run.Stub == nil || run.Stub.Serve == nil {
		return []error{fmt.Errorf("the daemon was not started (exit %d):\n%s", run.Exit, run.Output)}
	}
	sv := run.Stub.Serve
	if sv.Err != "" {
		fail("%s", sv.Err)
	}
	for _, name := range []string{"liveness", "readiness"} {
		if p := sv.Probes[name]; p.Status != 200 {
			fail("the %s probe answered %d %s", name, p.Status, p.Body)
		}
	}
	if body := sv.Probes["readiness"].Body; !strings.Contains(body, `"isolation":"`+exp.Isolation+`"`) {
		fail("the daemon does not report isolation %s: %s", exp.Isolation, body)
	}
	if sv.Exit != 0 {
		fail("the daemon exited %d on SIGTERM", sv.Exit)
	}
	if len(errs) > 0 {
		errs = append(errs, fmt.Errorf("the daemon's log:\n%s", sv.Log))
	}
	return errs
}
