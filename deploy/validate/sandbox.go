package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// RunConfig describes one simulated start of a container: the rendered
// pod, the image, and host files standing in for the image's.
type RunConfig struct {
	Image     Image
	Bundle    *Bundle
	Workload  Workload
	Container corev1.Container
	// Files are the image's files: container path → host path (the
	// entrypoint, the stub as the daemon's binary, the real daemon).
	Files map[string]string
	// Control is what the stub is asked to do after recording.
	Control stubControl
	// Dir is an empty host directory for the volumes and the report.
	Dir string
}

// Run is the outcome of a simulated start.
type Run struct {
	// Argv is what the runtime executes (ContainerArgv).
	Argv []string
	// Exit is the container's exit status; Output its stdout and stderr.
	Exit   int
	Output string
	// Stub is what the stub recorded; nil when it never ran (the
	// container failed before exec'ing the daemon).
	Stub *StubReport
	// Volumes maps each volume name to the host directory standing in for
	// it.
	Volumes map[string]string
}

// defaultCaps is the capability set a container runtime grants by
// default (containerd's and CRI-O's).
var defaultCaps = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
	"NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// containerCaps is defaultCaps with the container's drop and add applied.
func containerCaps(c corev1.Container) []string {
	caps := slices.Clone(defaultCaps)
	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			if d == "ALL" {
				caps = nil
			}
			caps = slices.DeleteFunc(caps, func(c string) bool { return c == string(d) })
		}
		for _, a := range sc.Capabilities.Add {
			if !slices.Contains(caps, string(a)) {
				caps = append(caps, string(a))
			}
		}
	}
	return caps
}

// RunContainer starts the container as its runtime would, in a bwrap
// sandbox standing in for it: root (uid 0) in a user namespace of its own,
// PID 1 the container's first process, the capabilities of its security
// context, no network but loopback, the host's /usr and /etc read-only as
// the image's system, the image's files from cfg.Files, and each volume
// mount backed by a host directory (a Secret's keys written as files, a
// claim's subPath a sub-directory). The environment is the container's
// (ContainerEnv) and nothing else. The host's /proc is bound (not a fresh
// one, whose masked entries would keep a bwrap inside from mounting its
// own /proc) when the container asks for procMount: Unmasked, and a fresh,
// partly covered one otherwise, as the runtime's masked /proc is.
func RunContainer(ctx context.Context, cfg RunConfig) (*Run, error) {
	c := cfg.Container
	env, declared, err := ContainerEnv(cfg.Image, cfg.Bundle, cfg.Workload, c)
	if err != nil {
		return nil, err
	}
	run := &Run{Argv: ContainerArgv(cfg.Image, c, declared), Volumes: map[string]string{}}
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, err
	}
	report := filepath.Join(cfg.Dir, "report")
	if err := os.MkdirAll(report, 0o755); err != nil {
		return nil, err
	}
	ctl, _ := json.Marshal(cfg.Control)
	if err := os.WriteFile(filepath.Join(report, "control.json"), ctl, 0o644); err != nil {
		return nil, err
	}
	args := []string{"--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0", "--as-pid-1",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL"}
	for _, cp := range containerCaps(c) {
		args = append(args, "--cap-add", "CAP_"+cp)
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		if t, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", t, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--ro-bind", "/etc", "/etc")
	if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
		args = append(args, "--bind", "/proc", "/proc")
	} else {
		// bwrap's own /proc covers parts of it read-only, as a runtime
		// masks them: a nested bwrap cannot mount a /proc of its own.
		args = append(args, "--proc", "/proc")
	}
	args = append(args, "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/run", "--symlink", "../run", "/var/run", "--dir", "/root",
		"--tmpfs", "/usr/local")
	dsts := make([]string, 0, len(cfg.Files))
	for dst := range cfg.Files {
		dsts = append(dsts, dst)
	}
	slices.Sort(dsts)
	for _, dst := range dsts {
		args = append(args, "--ro-bind", cfg.Files[dst], dst)
	}
	wd := cfg.Image.WorkingDir
	if c.WorkingDir != "" {
		wd = c.WorkingDir
	}
	if wd == "" {
		wd = "/"
	}
	args = append(args, "--dir", wd)
	mounts, err := volumeBinds(cfg, run.Volumes)
	if err != nil {
		return nil, err
	}
	args = append(args, mounts...)
	args = append(args, "--bind", report, reportDir, "--chdir", wd, "--")
	args = append(args, run.Argv...)

	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	run.Output = out.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		run.Exit = ee.ExitCode()
	default:
		return nil, fmt.Errorf("bwrap: %w\n%s", err, run.Output)
	}
	if b, err := os.ReadFile(filepath.Join(report, "stub.json")); err == nil {
		run.Stub = &StubReport{}
		if err := json.Unmarshal(b, run.Stub); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// volumeBinds backs each of the container's volume mounts with a host
// directory under cfg.Dir and returns the bwrap arguments that mount them.
func volumeBinds(cfg RunConfig, dirs map[string]string) ([]string, error) {
	vols := map[string]corev1.Volume{}
	for _, v := range cfg.Workload.Pod.Spec.Volumes {
		vols[v.Name] = v
	}
	claims := map[string]bool{}
	for _, t := range cfg.Workload.ClaimTemplates {
		claims[t.Name] = true
	}
	var args []string
	for _, m := range cfg.Container.VolumeMounts {
		host, ok := dirs[m.Name]
		if !ok {
			host = filepath.Join(cfg.Dir, "volumes", m.Name)
			if err := os.MkdirAll(host, 0o755); err != nil {
				return nil, err
			}
			v, isVol := vols[m.Name]
			switch {
			case claims[m.Name] && !isVol:
			case isVol && (v.PersistentVolumeClaim != nil || v.EmptyDir != nil):
			case isVol && v.Secret != nil:
				if err := writeSecretVolume(cfg.Bundle, v.Secret, host); err != nil {
					return nil, fmt.Errorf("volume %s: %w", m.Name, err)
				}
			default:
				return nil, fmt.Errorf("volume %s: not a claim, an emptyDir or a Secret: not modelled", m.Name)
			}
			dirs[m.Name] = host
		}
		if m.SubPath != "" {
			if !filepath.IsLocal(m.SubPath) {
				return nil, fmt.Errorf("volume mount %s: subPath %q leaves the volume", m.Name, m.SubPath)
			}
			host = filepath.Join(host, m.SubPath)
			if err := os.MkdirAll(host, 0o755); err != nil { // the kubelet creates it
				return nil, err
			}
		}
		op := "--bind"
		if m.ReadOnly {
			op = "--ro-bind"
		}
		args = append(args, op, host, m.MountPath)
	}
	return args, nil
}

// writeSecretVolume writes a Secret volume's files: every key, or the
// listed items, with the volume's mode.
func writeSecretVolume(b *Bundle, s *corev1.SecretVolumeSource, dir string) error {
	data, ok := b.Secret(s.SecretName)
	if !ok {
		return fmt.Errorf("no Secret %q in the bundle", s.SecretName)
	}
	mode := os.FileMode(0o644)
	if s.DefaultMode != nil {
		mode = os.FileMode(*s.DefaultMode)
	}
	files := map[string][]byte{}
	if len(s.Items) == 0 {
		files = data
	}
	for _, it := range s.Items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("Secret %q has no key %q", s.SecretName, it.Key)
		}
		if !filepath.IsLocal(it.Path) || strings.Contains(it.Path, "..") {
			return fmt.Errorf("item path %q", it.Path)
		}
		files[it.Path] = v
	}
	for p, v := range files {
		full := filepath.Join(dir, path.Clean(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, v, mode); err != nil {
			return err
		}
	}
	return nil
}
