package validate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The repository, and the manifests' tree under it.
const (
	repo      = "../.."
	manifests = "../kubernetes"
)

// TestMain runs the stub when this binary is started as the daemon inside
// a simulated container (see RunContainer).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == StubName {
		os.Exit(StubMain())
	}
	code := m.Run()
	if daemonDir != "" {
		os.RemoveAll(daemonDir)
	}
	os.Exit(code)
}

// require is the rule of the repository's tests for a missing tool: it
// fails under CI (.ci/run installs every tool), and skips elsewhere.
func require(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (required when CI is set; .ci/run installs it)", what)
	}
	t.Skipf("%s is missing; run bash .ci/run", what)
}

// variant is one kustomization the repository ships.
type variant struct {
	name, dir string
	kind      string   // the workload's kind
	files     []string // the files the operator creates before applying
}

var variants = []variant{
	{"sharded", ".", "StatefulSet", []string{"token"}},
	{"rwx", "rwx", "Deployment", []string{"rwx/token", "rwx/ssh_host_key"}},
}

// operatorFiles makes what an operator creates before applying: a token
// as `openssl rand -hex 32` prints it, and an ed25519 host key as
// ssh-keygen writes it. It returns them and the key's fingerprint.
func operatorFiles(t *testing.T, v variant) (map[string][]byte, string) {
	t.Helper()
	files := map[string][]byte{}
	var fp string
	for _, f := range v.files {
		switch filepath.Base(f) {
		case "token":
			b := make([]byte, 32)
			rand.Read(b)
			files[f] = []byte(hex.EncodeToString(b) + "\n")
		case "ssh_host_key":
			pub, priv, _ := ed25519.GenerateKey(rand.Reader)
			blk, err := ssh.MarshalPrivateKey(priv, "agentbe")
			if err != nil {
				t.Fatal(err)
			}
			files[f] = pem.EncodeToMemory(blk)
			sp, _ := ssh.NewPublicKey(pub)
			fp = ssh.FingerprintSHA256(sp)
		default:
			t.Fatalf("no recipe for %s", f)
		}
	}
	return files, fp
}

func render(t *testing.T, v variant, files map[string][]byte) *Bundle {
	t.Helper()
	b, err := Render(manifests, filepath.Join(manifests, v.dir), files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var image = sync.OnceValues(func() (Image, error) {
	b, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		return Image{}, err
	}
	return ParseDockerfile(b)
})

func mustImage(t *testing.T) Image {
	t.Helper()
	img, err := image()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func expect(t *testing.T) Expect {
	t.Helper()
	key, err := DaemonDefaults(repo)
	if err != nil {
		t.Fatal(err)
	}
	return Expect{Isolation: "bwrap", HostKeyDefault: key}
}

// imageFiles maps the image's files to host files: what the final stage
// copies from the build context, from the repository; the daemon binary
// the build stage makes, the stub (this test binary).
func imageFiles(t *testing.T, img Image) map[string]string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, cp := range img.Copies {
		switch {
		case cp.From == "" && len(cp.Srcs) == 1:
			files[cp.Dst] = filepath.Join(repo, cp.Srcs[0])
		case cp.From != "" && filepath.Base(cp.Dst) == StubName:
			files[cp.Dst] = self
		}
	}
	if files["/usr/local/bin/"+StubName] == "" {
		t.Fatalf("the Dockerfile does not install the daemon as /usr/local/bin/%s: %+v", StubName, img.Copies)
	}
	return files
}

// startContainer runs the workload's container in the simulated
// container; daemon, when set, is the real binary the stub then starts.
func startContainer(t *testing.T, b *Bundle, w Workload, daemon string) *Run {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	require(t, err == nil, "bwrap")
	img := mustImage(t)
	c := w.Pod.Spec.Containers[0]
	cfg := RunConfig{Image: img, Bundle: b, Workload: w, Container: c, Files: imageFiles(t, img), Dir: t.TempDir()}
	if daemon != "" {
		const inside = "/usr/local/libexec/agentbe/agent-backend"
		cfg.Files[inside] = daemon
		cfg.Control = stubControl{Daemon: inside, Seconds: 90, Probes: []stubProbe{
			{"liveness", probePort(c, c.LivenessProbe.HTTPGet.Port), c.LivenessProbe.HTTPGet.Path},
			{"readiness", probePort(c, c.ReadinessProbe.HTTPGet.Port), c.ReadinessProbe.HTTPGet.Path},
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := RunContainer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func only(t *testing.T, b *Bundle, kind string) Workload {
	t.Helper()
	ws := b.Workloads()
	if len(ws) != 1 || ws[0].Kind != kind {
		t.Fatalf("want one %s, got %+v", kind, ws)
	}
	return ws[0]
}

func joinErrs(errs []error) string { return errors.Join(errs...).Error() }

// TestDockerfile: the image's entrypoint and command, and every variable
// its build sets with -X exists in the command's package (the linker
// ignores an -X naming nothing, silently).
func TestDockerfile(t *testing.T) {
	img := mustImage(t)
	if !slices.Equal(img.Entrypoint, []string{"/docker-entrypoint.sh"}) || !slices.Equal(img.Cmd, []string{"agent-backend", "daemon"}) ||
		img.WorkingDir != "/var/workspace" {
		t.Errorf("%+v", img)
	}
	vars := map[string]bool{}
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(repo, "cmd", "agent-backend"), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, s := range g.Specs {
						for _, n := range s.(*ast.ValueSpec).Names {
							vars["main."+n.Name] = true
						}
					}
				}
			}
		}
	}
	if len(img.LinkerVars) < 2 {
		t.Errorf("linker variables %v", img.LinkerVars)
	}
	for _, v := range img.LinkerVars {
		if !vars[v] {
			t.Errorf("the Dockerfile sets %s, which cmd/agent-backend does not declare", v)
		}
	}
}

func TestParseDockerfile(t *testing.T) {
	img, err := ParseDockerfile([]byte(`ARG V=1
FROM a AS b
ENTRYPOINT ["/x"]
FROM c
ARG V
ENV A=$V B="two words" \
    C=${V}x
CMD ["old"]
ENTRYPOINT ["/e", "arg"]
WORKDIR /w
COPY --from=b /out/bin /usr/bin/bin
COPY f.sh /f.sh
RUN go build -ldflags "-X main.version=${V} -X main.revision=" .
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.Entrypoint, []string{"/e", "arg"}) || img.Cmd != nil || img.WorkingDir != "/w" ||
		!slices.Equal(img.Env, []string{"A=1", "B=two words", "C=1x"}) ||
		!slices.Equal(img.LinkerVars, []string{"main.version", "main.revision"}) || len(img.Copies) != 2 ||
		img.Copies[0].From != "b" || img.Copies[1].Dst != "/f.sh" {
		t.Errorf("%+v", img)
	}
	for _, bad := range []string{
		"FROM a\nENTRYPOINT /docker-entrypoint.sh\n",
		"FROM a\nCMD [\"x\"\n",
		"ENTRYPOINT [\"/x\"]\n",
		"FROM a\nCMD [\"x\"]\n",
		"FROM a\nENTRYPOINT []\n",
		"FROM a\nENTRYPOINT [\"/x\"] \\\n",
	} {
		if _, err := ParseDockerfile([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func FuzzParseDockerfile(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join(repo, "Dockerfile")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("FROM a\nENV A=\"x\nENTRYPOINT [\"/x\"]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := ParseDockerfile(b)
		if err == nil && len(img.Entrypoint) == 0 {
			t.Error("no entrypoint and no error")
		}
	})
}

// TestRenderNeedsTheOperatorsFiles: without the token (and, for rwx, the
// host key) the operator creates, kustomize refuses to build: no
// placeholder secret can be deployed.
func TestRenderNeedsTheOperatorsFiles(t *testing.T) {
	for _, v := range variants {
		files, _ := operatorFiles(t, v)
		for _, missing := range v.files {
			partial := map[string][]byte{}
			for k, b := range files {
				if k != missing {
					partial[k] = b
				}
			}
			_, err := Render(manifests, filepath.Join(manifests, v.dir), partial)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(missing)) {
				t.Errorf("%s without %s: %v", v.name, missing, err)
			}
		}
	}
}

// TestNoSecretInTheRepository: no manifest holds a Secret or a literal
// secret; the files the operator creates are ignored by git.
func TestNoSecretInTheRepository(t *testing.T) {
	ignore, err := os.ReadFile(filepath.Join(manifests, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		for _, f := range v.files {
			if !slices.Contains(strings.Fields(string(ignore)), "/"+f) {
				t.Errorf(".gitignore does not list /%s", f)
			}
		}
	}
	err = filepath.WalkDir(manifests, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, bad := range []string{"kind: Secret", "stringData", "literals:", "envs:"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s holds %q", p, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// kustomization is the part of a kustomization.yaml the manifests use;
// decoding strictly into it refuses any other field.
type kustomization struct {
	APIVersion      string           `json:"apiVersion"`
	Kind            string           `json:"kind"`
	Resources       []string         `json:"resources"`
	SecretGenerator []map[string]any `json:"secretGenerator"`
	Images          []map[string]any `json:"images"`
}

// TestEveryManifestIsRendered: every YAML file of the tree is a
// kustomization or listed in one, so none is silently left out, and the
// kustomizations use only the fields above.
func TestEveryManifestIsRendered(t *testing.T) {
	listed := map[string]bool{}
	var all []string
	err := filepath.WalkDir(manifests, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		all = append(all, p)
		if d.Name() != "kustomization.yaml" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k kustomization
		if err := strictUnmarshal(b, &k); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		listed[p] = true
		for _, r := range k.Resources {
			listed[filepath.Join(filepath.Dir(p), r)] = true
			listed[filepath.Join(filepath.Dir(p), r, "kustomization.yaml")] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if !listed[p] {
			t.Errorf("%s is in no kustomization", p)
		}
	}
	if len(all) < 10 {
		t.Errorf("only %d manifests found", len(all))
	}
}

// TestVariants renders each variant with the operator's files and checks
// the objects and the pod, then starts the container with the stub as the
// daemon and checks the command line it got.
func TestVariants(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			files, _ := operatorFiles(t, v)
			b := render(t, v, files)
			w := only(t, b, v.kind)
			if errs := CheckPod(w); len(errs) > 0 {
				t.Error(joinErrs(errs))
			}
			if w.Replicas < 2 {
				t.Errorf("replicas %d", w.Replicas)
			}
			if errs := CheckEgress(b.NetworkPolicies, w.Pod.Labels); len(errs) > 0 {
				t.Error(joinErrs(errs))
			}
			checkServiceAndBudget(t, b, w)
			switch v.kind {
			case "StatefulSet":
				s := b.StatefulSets[0]
				if len(s.Spec.VolumeClaimTemplates) != 1 || !slices.Contains(s.Spec.VolumeClaimTemplates[0].Spec.AccessModes, corev1.ReadWriteOnce) {
					t.Error("no ReadWriteOnce claim per replica")
				}
			case "Deployment":
				if len(b.Claims) != 1 || !slices.Contains(b.Claims[0].Spec.AccessModes, corev1.ReadWriteMany) {
					t.Errorf("no ReadWriteMany claim: %+v", b.Claims)
				}
			}
			run := startContainer(t, b, w, "")
			if errs := CheckRun(w, w.Pod.Spec.Containers[0], mustImage(t), run, expect(t)); len(errs) > 0 {
				t.Fatal(joinErrs(errs))
			}
			t.Logf("%s: the daemon's argv: %q", v.name, run.Stub.Argv)
		})
	}
}

// checkServiceAndBudget: the Service selects the pods on the http port
// (headless, and named by serviceName, for a StatefulSet), and the
// disruption budget selects them.
func checkServiceAndBudget(t *testing.T, b *Bundle, w Workload) {
	t.Helper()
	if len(b.Services) != 1 {
		t.Fatalf("services %d", len(b.Services))
	}
	svc := b.Services[0]
	if !selects(svc.Spec.Selector, w.Pod.Labels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 3001 ||
		svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("service %+v", svc.Spec)
	}
	if w.Kind == "StatefulSet" && (svc.Spec.ClusterIP != "None" || b.StatefulSets[0].Spec.ServiceName != svc.Name) {
		t.Error("the StatefulSet's service is not headless or not its serviceName")
	}
	if len(b.Budgets) != 1 || b.Budgets[0].Spec.Selector == nil || !selects(b.Budgets[0].Spec.Selector.MatchLabels, w.Pod.Labels) ||
		b.Budgets[0].Spec.MaxUnavailable == nil || b.Budgets[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("disruption budget %+v", b.Budgets)
	}
}

// daemonDir holds the daemon binary buildDaemon makes; TestMain removes
// it.
var daemonDir string

// buildDaemon builds cmd/agent-backend once ($AGENTBE_BIN, when set, is
// used instead, as the command's own tests do).
var buildDaemon = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("AGENTBE_BIN"); bin != "" {
		return filepath.Abs(bin)
	}
	dir, err := os.MkdirTemp("", "agentbe-validate-")
	if err != nil {
		return "", err
	}
	daemonDir = dir
	bin := filepath.Join(dir, "agent-backend")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agent-backend")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

func daemonBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildDaemon()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestVariantsServe starts the real daemon with the command line and the
// environment each variant gives it, inside the simulated container (its
// token from the Secret file, bwrap inside): it becomes live and ready on
// the probes' paths, and stops cleanly on SIGTERM. The host key it uses is
// where the pod keeps it: written on the replica's volume (sharded), or
// the one from the Secret (rwx), whose fingerprint its log shows.
func TestVariantsServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			files, fp := operatorFiles(t, v)
			b := render(t, v, files)
			w := only(t, b, v.kind)
			run := startContainer(t, b, w, daemonBinary(t))
			if errs := CheckServe(run, expect(t)); len(errs) > 0 {
				t.Fatal(joinErrs(errs))
			}
			log := run.Stub.Serve.Log
			t.Logf("readiness: %s\nlog:\n%s", run.Stub.Serve.Probes["readiness"].Body, log)
			switch v.kind {
			case "StatefulSet":
				key := filepath.Join(run.Volumes["data"], "agentbe", "ssh_host_ed25519_key")
				if _, err := os.Stat(key); err != nil {
					t.Errorf("the host key was not written on the replica's volume: %v\n%s", err, log)
				}
				if !strings.Contains(log, "fingerprint=SHA256:") {
					t.Errorf("no fingerprint in the log:\n%s", log)
				}
			case "Deployment":
				if !strings.Contains(log, "fingerprint="+fp) {
					t.Errorf("the daemon does not use the Secret's host key %s:\n%s", fp, log)
				}
			}
		})
	}
}

// TestCrashLoopManifestFails: the StatefulSet first committed (args
// starting with "daemon", which replace the image's CMD) fails the check:
// the entrypoint execs "daemon", which does not exist.
func TestCrashLoopManifestFails(t *testing.T) {
	raw, err := os.ReadFile("testdata/crashloop-statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := operatorFiles(t, variants[0])
	b := render(t, variants[0], files)
	w := only(t, b, "StatefulSet")
	var old appsv1.StatefulSet
	if err := strictUnmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	// The old pod's container, with the new pod's volumes, so that only
	// the command line differs.
	c := old.Spec.Template.Spec.Containers[0]
	c.VolumeMounts = w.Pod.Spec.Containers[0].VolumeMounts
	c.Env = w.Pod.Spec.Containers[0].Env
	w.Pod.Spec.Containers[0] = c
	run := startContainer(t, b, w, "")
	errs := CheckRun(w, c, mustImage(t), run, expect(t))
	msg := joinErrs(append(errs, errors.New("")))
	if run.Exit != 127 || !strings.Contains(msg, "crash loop") || !strings.Contains(run.Output, "daemon: not found") {
		t.Errorf("exit %d, errors:\n%s\noutput:\n%s", run.Exit, msg, run.Output)
	}
}

// TestCheckRunFails: each way a container can start wrong is caught.
func TestCheckRunFails(t *testing.T) {
	files, _ := operatorFiles(t, variants[0])
	base := render(t, variants[0], files)
	cases := []struct {
		name   string
		mutate func(w *Workload)
		want   string
	}{
		{"command bypasses the entrypoint", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			c.Command = []string{"agent-backend"}
			c.Args = append([]string{"daemon", "--rootDir", "/var/workspace", "--port", "3001"}, c.Args[2:]...)
		}, "not the image's entrypoint"},
		{"a shell keeps PID 1", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			c.Args = []string{"bash", "-c", "agent-backend daemon --rootDir /var/workspace --port 3001 --auth-token-file /var/run/secrets/agentbe/token --isolation bwrap; exit $?"}
		}, "not 1"},
		{"token on the command line", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			c.Args = []string{"agent-backend", "daemon", "--auth-token", strings.Repeat("x", 40), "--isolation", "bwrap"}
		}, "given --auth-token"},
		{"isolation left to auto", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			c.Args = []string{"agent-backend", "daemon", "--auth-token-file", "/var/run/secrets/agentbe/token"}
		}, `--isolation is ""`},
		{"host key on an emptyDir", func(w *Workload) {
			w.Pod.Spec.Volumes = append(w.Pod.Spec.Volumes, corev1.Volume{Name: "hostkey",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c := &w.Pod.Spec.Containers[0]
			for i, m := range c.VolumeMounts {
				if m.MountPath == "/var/lib/agentbe" {
					c.VolumeMounts[i] = corev1.VolumeMount{Name: "hostkey", MountPath: "/var/lib/agentbe"}
				}
			}
		}, "does not outlive the pod"},
		{"host key inside the workspace", func(w *Workload) {
			setEnvVar(&w.Pod.Spec.Containers[0], "SSH_HOST_KEY", "/var/workspace/.ssh/host_key")
		}, "inside the workspace"},
		{"host key in the workspace's volume, below it", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			for i, m := range c.VolumeMounts {
				if m.MountPath == "/var/lib/agentbe" {
					c.VolumeMounts[i].SubPath = "workspace/.agentbe"
				}
			}
		}, "inside the workspace"},
		{"host key on the image's filesystem", func(w *Workload) {
			setEnvVar(&w.Pod.Spec.Containers[0], "SSH_HOST_KEY", "/etc/agentbe/host_key")
		}, "container's own filesystem"},
		{"workspace on an emptyDir", func(w *Workload) {
			w.Pod.Spec.Volumes = append(w.Pod.Spec.Volumes, corev1.Volume{Name: "scratch",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c := &w.Pod.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
			setEnvVar(c, "WORKSPACE_ROOT", "/scratch")
		}, "not on a persistent volume claim"},
		{"port differs from the container's", func(w *Workload) {
			setEnvVar(&w.Pod.Spec.Containers[0], "PORT", "4000")
		}, "http port is 3001"},
		{"token in the environment", func(w *Workload) {
			c := &w.Pod.Spec.Containers[0]
			c.Args = []string{"agent-backend", "daemon", "--auth-token-file", "/var/run/secrets/agentbe/token", "--isolation", "bwrap"}
			c.Env = append(c.Env, corev1.EnvVar{Name: "AGENTBE_AUTH_TOKEN", Value: strings.Repeat("y", 40)})
		}, "environment holds AGENTBE_AUTH_TOKEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := deepCopy(only(t, base, "StatefulSet"))
			tc.mutate(&w)
			run := startContainer(t, base, w, "")
			errs := CheckRun(w, w.Pod.Spec.Containers[0], mustImage(t), run, expect(t))
			if len(errs) == 0 || !strings.Contains(joinErrs(errs), tc.want) {
				t.Errorf("want an error with %q, got %v\nstub: %+v\n%s", tc.want, errs, run.Stub, run.Output)
			}
		})
	}
}

// TestCheckServeFailsPlaceholderToken: a token file holding the
// placeholder the first manifests shipped makes the real daemon exit 1,
// and the check says so.
func TestCheckServeFailsPlaceholderToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	b := render(t, variants[0], map[string][]byte{"token": []byte("change-me-to-a-long-random-value")})
	w := only(t, b, "StatefulSet")
	run := startContainer(t, b, w, daemonBinary(t))
	errs := CheckServe(run, expect(t))
	msg := joinErrs(append(errs, errors.New("")))
	if len(errs) == 0 || !strings.Contains(msg, "published placeholder") || !strings.Contains(msg, "the daemon exited while being probed") {
		t.Errorf("errors:\n%s", msg)
	}
}

// TestCheckServeFailsMaskedProc: without procMount: Unmasked the daemon
// cannot run bwrap (no /proc of its own for the sandbox), so, having asked
// for --isolation bwrap, it exits at start saying why, and never serves.
func TestCheckServeFailsMaskedProc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	files, _ := operatorFiles(t, variants[0])
	b := render(t, variants[0], files)
	w := deepCopy(only(t, b, "StatefulSet"))
	w.Pod.Spec.Containers[0].SecurityContext.ProcMount = nil
	run := startContainer(t, b, w, daemonBinary(t))
	errs := CheckServe(run, expect(t))
	msg := joinErrs(append(errs, errors.New("")))
	if len(errs) == 0 || !strings.Contains(msg, "isolation bwrap is not usable") {
		t.Errorf("errors:\n%s", msg)
	}
}

// TestCheckPodFails: each missing protection of the pod is caught.
func TestCheckPodFails(t *testing.T) {
	files, _ := operatorFiles(t, variants[0])
	base := render(t, variants[0], files)
	yes := true
	cases := []struct {
		name   string
		mutate func(w *Workload)
		want   string
	}{
		{"service account token", func(w *Workload) { w.Pod.Spec.AutomountServiceAccountToken = &yes }, "automountServiceAccountToken"},
		{"service links", func(w *Workload) { w.Pod.Spec.EnableServiceLinks = nil }, "enableServiceLinks"},
		{"host users", func(w *Workload) { w.Pod.Spec.HostUsers = &yes }, "hostUsers"},
		{"recursive chown", func(w *Workload) { w.Pod.Spec.SecurityContext.FSGroupChangePolicy = nil }, "OnRootMismatch"},
		{"no spread", func(w *Workload) { w.Pod.Spec.TopologySpreadConstraints = nil }, "topology spread"},
		{"masked proc", func(w *Workload) { w.Pod.Spec.Containers[0].SecurityContext.ProcMount = nil }, "procMount"},
		{"privilege escalation", func(w *Workload) { w.Pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes }, "allowPrivilegeEscalation"},
		{"readiness is liveness", func(w *Workload) { w.Pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Path = "/health" }, "readiness probe must GET /health?ready=1"},
		{"no liveness", func(w *Workload) { w.Pod.Spec.Containers[0].LivenessProbe = nil }, "liveness probe"},
		{"short grace", func(w *Workload) { g := int64(5); w.Pod.Spec.TerminationGracePeriodSeconds = &g }, "terminationGracePeriodSeconds"},
	}
	for _, tc := range cases {
		w := deepCopy(only(t, base, "StatefulSet"))
		tc.mutate(&w)
		if errs := CheckPod(w); len(errs) == 0 || !strings.Contains(joinErrs(errs), tc.want) {
			t.Errorf("%s: want an error with %q, got %v", tc.name, tc.want, errs)
		}
	}
}

// TestEgress: the shipped policy lets agents reach DNS and the internet
// and nothing private; an Ingress-only policy (the first one shipped), an
// empty egress rule or an ipBlock without exceptions fail the check.
func TestEgress(t *testing.T) {
	files, _ := operatorFiles(t, variants[0])
	b := render(t, variants[0], files)
	labels := map[string]string{"app.kubernetes.io/name": "agentbe"}
	for _, a := range []string{"8.8.8.8", "140.82.112.3", "2606:4700:4700::1111"} {
		if !EgressAllows(b.NetworkPolicies, netip.MustParseAddr(a), 443) {
			t.Errorf("%s:443 refused: agents could not fetch packages", a)
		}
	}
	dns := false
	for _, r := range b.NetworkPolicies[0].Spec.Egress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.IntValue() == 53 && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP && len(r.To) > 0 &&
				r.To[0].PodSelector != nil && r.To[0].PodSelector.MatchLabels["k8s-app"] == "kube-dns" {
				dns = true
			}
		}
	}
	if !dns {
		t.Error("no egress rule for DNS to kube-dns")
	}
	old := deepCopyPolicy(b.NetworkPolicies[0])
	old.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	old.Spec.Egress = nil
	open := deepCopyPolicy(b.NetworkPolicies[0])
	open.Spec.Egress = append(open.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
	noExcept := deepCopyPolicy(b.NetworkPolicies[0])
	noExcept.Spec.Egress[1].To[0].IPBlock.Except = nil
	v6 := deepCopyPolicy(b.NetworkPolicies[0])
	v6.Spec.Egress[1].To[1].IPBlock.Except = []string{"fe80::/10"}
	for name, p := range map[string]networkingv1.NetworkPolicy{"ingress only": old, "empty rule": open, "no except": noExcept, "v6 ULA open": v6} {
		if errs := CheckEgress([]networkingv1.NetworkPolicy{p}, labels); len(errs) == 0 {
			t.Errorf("%s: passed", name)
		}
	}
	if errs := CheckEgress(nil, labels); len(errs) == 0 {
		t.Error("no policy: passed")
	}
}

func setEnvVar(c *corev1.Container, name, value string) {
	for i, e := range c.Env {
		if e.Name == name {
			c.Env[i].Value = value
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func deepCopy(w Workload) Workload {
	w.Pod = *w.Pod.DeepCopy()
	claims := make([]corev1.PersistentVolumeClaim, len(w.ClaimTemplates))
	for i := range w.ClaimTemplates {
		claims[i] = *w.ClaimTemplates[i].DeepCopy()
	}
	w.ClaimTemplates = claims
	return w
}

func deepCopyPolicy(p networkingv1.NetworkPolicy) networkingv1.NetworkPolicy { return *p.DeepCopy() }
