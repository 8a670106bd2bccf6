package validate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerArgv is the argv the container runtime starts for c in img,
// with Kubernetes' rules: command replaces the image's ENTRYPOINT and args
// its CMD; a command without args drops the CMD too. $(NAME) in command
// and args is replaced by the container's variable NAME when it has one
// ($$ escapes a $).
func ContainerArgv(img Image, c corev1.Container, env map[string]string) []string {
	var argv []string
	switch {
	case len(c.Command) > 0:
		argv = append(expandAll(c.Command, env), expandAll(c.Args, env)...)
	case len(c.Args) > 0:
		argv = append(slices.Clone(img.Entrypoint), expandAll(c.Args, env)...)
	default:
		argv = append(slices.Clone(img.Entrypoint), img.Cmd...)
	}
	return argv
}

func expandAll(in []string, env map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expandK8s(s, env)
	}
	return out
}

// expandK8s expands $(NAME) references as the kubelet does: a defined
// variable is replaced, an undefined reference is kept as is, and $$
// becomes $.
func expandK8s(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte('$')
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// defaultPath is the PATH of a container whose image sets none (the
// runtime's default, and ubuntu's).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ContainerEnv is the environment the container's first process gets: the
// image's (PATH defaulted), HOSTNAME, HOME, then the container's envFrom
// and env in order (later wins; $(NAME) in a value refers to variables
// defined before it). Secret references are resolved from b; field
// references know metadata.name, metadata.namespace and status.podIP.
// Anything else is an error, so the check never runs with a guess.
func ContainerEnv(img Image, b *Bundle, w Workload, c corev1.Container) (proc []string, declared map[string]string, err error) {
	proc = []string{"PATH=" + defaultPath, "HOSTNAME=" + w.PodName(), "HOME=/root"}
	for _, kv := range img.Env {
		k, v, _ := strings.Cut(kv, "=")
		proc = setEnv(proc, k, v)
	}
	declared = map[string]string{}
	set := func(k, v string) {
		declared[k] = v
		proc = setEnv(proc, k, v)
	}
	for _, ef := range c.EnvFrom {
		if ef.SecretRef == nil {
			return nil, nil, fmt.Errorf("envFrom: only secretRef is modelled")
		}
		data, ok := b.Secret(ef.SecretRef.Name)
		if !ok {
			return nil, nil, fmt.Errorf("envFrom: no Secret %q in the bundle", ef.SecretRef.Name)
		}
		for k, v := range data {
			set(ef.Prefix+k, string(v))
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, expandK8s(e.Value, declared))
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			data, ok := b.Secret(ref.Name)
			v, has := data[ref.Key]
			if !ok || !has {
				return nil, nil, fmt.Errorf("env %s: no key %q in Secret %q", e.Name, ref.Key, ref.Name)
			}
			set(e.Name, string(v))
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				set(e.Name, w.PodName())
			case "metadata.namespace":
				set(e.Name, "default")
			case "status.podIP":
				set(e.Name, "10.244.1.7")
			default:
				return nil, nil, fmt.Errorf("env %s: field %s is not modelled", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		default:
			return nil, nil, fmt.Errorf("env %s: this valueFrom is not modelled", e.Name)
		}
	}
	return proc, declared, nil
}
