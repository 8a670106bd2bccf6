package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Bundle is a rendered kustomization, every object decoded strictly into
// its API type.
type Bundle struct {
	Secrets         []corev1.Secret
	Services        []corev1.Service
	Claims          []corev1.PersistentVolumeClaim
	StatefulSets    []appsv1.StatefulSet
	Deployments     []appsv1.Deployment
	NetworkPolicies []networkingv1.NetworkPolicy
	Budgets         []policyv1.PodDisruptionBudget
}

// Render builds the kustomization in dir as `kustomize build` does, on an
// in-memory copy of the tree under root (dir must be inside it) to which
// extra is added (paths relative to root, e.g. the token file the
// operator creates): nothing is written to disk. Each object must be of a
// kind the check knows and decode strictly (an unknown or misspelt field,
// a wrong type or a duplicate key fails).
func Render(root, dir string, extra map[string][]byte) (*Bundle, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return mem.MkdirAll(p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(p, b)
	})
	if err != nil {
		return nil, err
	}
	for rel, b := range extra {
		p := filepath.Join(root, rel)
		if err := mem.MkdirAll(filepath.Dir(p)); err != nil {
			return nil, err
		}
		if err := mem.WriteFile(p, b); err != nil {
			return nil, err
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var b Bundle
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		id := r.GetKind() + "/" + r.GetName()
		var into any
		switch r.GetApiVersion() + " " + r.GetKind() {
		case "v1 Secret":
			b.Secrets = append(b.Secrets, corev1.Secret{})
			into = &b.Secrets[len(b.Secrets)-1]
		case "v1 Service":
			b.Services = append(b.Services, corev1.Service{})
			into = &b.Services[len(b.Services)-1]
		case "v1 PersistentVolumeClaim":
			b.Claims = append(b.Claims, corev1.PersistentVolumeClaim{})
			into = &b.Claims[len(b.Claims)-1]
		case "apps/v1 StatefulSet":
			b.StatefulSets = append(b.StatefulSets, appsv1.StatefulSet{})
			into = &b.StatefulSets[len(b.StatefulSets)-1]
		case "apps/v1 Deployment":
			b.Deployments = append(b.Deployments, appsv1.Deployment{})
			into = &b.Deployments[len(b.Deployments)-1]
		case "networking.k8s.io/v1 NetworkPolicy":
			b.NetworkPolicies = append(b.NetworkPolicies, networkingv1.NetworkPolicy{})
			into = &b.NetworkPolicies[len(b.NetworkPolicies)-1]
		case "policy/v1 PodDisruptionBudget":
			b.Budgets = append(b.Budgets, policyv1.PodDisruptionBudget{})
			into = &b.Budgets[len(b.Budgets)-1]
		default:
			return nil, fmt.Errorf("%s: %s is not a kind this check knows", id, r.GetApiVersion())
		}
		if err := strictUnmarshal(y, into); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	return &b, nil
}

// strictUnmarshal converts YAML to JSON and decodes it the way the API
// server does in strict mode: field names matched case-sensitively,
// unknown and duplicate fields refused.
func strictUnmarshal(b []byte, into any) error {
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, into, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return errors.Join(strictErrs...)
	}
	return nil
}

// Workload is a pod template and what it is deployed by.
type Workload struct {
	Kind, Name string
	Replicas   int32
	Pod        corev1.PodTemplateSpec
	// ClaimTemplates are a StatefulSet's per-replica claims.
	ClaimTemplates []corev1.PersistentVolumeClaim
}

// PodName is the name of the workload's first pod (a StatefulSet's is
// NAME-0; a Deployment's carries a random suffix, here a fixed one).
func (w Workload) PodName() string {
	if w.Kind == "StatefulSet" {
		return w.Name + "-0"
	}
	return w.Name + "-5d8f7c9b6d-x2k4p"
}

// Workloads lists the bundle's StatefulSets and Deployments.
func (b *Bundle) Workloads() []Workload {
	var out []Workload
	for _, s := range b.StatefulSets {
		out = append(out, Workload{Kind: "StatefulSet", Name: s.Name, Replicas: replicas(s.Spec.Replicas),
			Pod: s.Spec.Template, ClaimTemplates: s.Spec.VolumeClaimTemplates})
	}
	for _, d := range b.Deployments {
		out = append(out, Workload{Kind: "Deployment", Name: d.Name, Replicas: replicas(d.Spec.Replicas), Pod: d.Spec.Template})
	}
	return out
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// Secret returns the named Secret's data (stringData merged, as the API
// server does).
func (b *Bundle) Secret(name string) (map[string][]byte, bool) {
	for _, s := range b.Secrets {
		if s.Name != name {
			continue
		}
		data := map[string][]byte{}
		for k, v := range s.Data {
			data[k] = v
		}
		for k, v := range s.StringData {
			data[k] = []byte(v)
		}
		return data, true
	}
	return nil, false
}
