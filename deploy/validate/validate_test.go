package validate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const dir = "../kubernetes"

// decodeStrict decodes one manifest, refusing unknown fields.
func decodeStrict(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if docs := bytes.Count(b, []byte("\n---")); docs > 0 {
		t.Fatalf("%s: one document per file expected", name)
	}
	if err := strictUnmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// strictUnmarshal converts YAML to JSON and decodes it the way the API
// server does in strict mode: field names matched case-sensitively, unknown
// and duplicate fields refused.
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

func TestEveryManifestIsListedAndKnown(t *testing.T) {
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	decodeStrict(t, "kustomization.yaml", &k)
	ents, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
	}
	for _, e := range ents {
		base := filepath.Base(e)
		if base != "kustomization.yaml" && !listed[base] {
			t.Errorf("%s is not in kustomization.yaml", base)
		}
	}
	if len(k.Resources) != 4 {
		t.Errorf("resources %v", k.Resources)
	}
}

func TestStatefulSet(t *testing.T) {
	var s appsv1.StatefulSet
	decodeStrict(t, "statefulset.yaml", &s)
	if s.Kind != "StatefulSet" || s.APIVersion != "apps/v1" {
		t.Fatalf("kind %s %s", s.APIVersion, s.Kind)
	}
	if s.Spec.ServiceName != "agentbe" || s.Spec.Replicas == nil || *s.Spec.Replicas < 2 {
		t.Errorf("serviceName %q replicas %v", s.Spec.ServiceName, s.Spec.Replicas)
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "workspace" {
		t.Errorf("no workspace PersistentVolumeClaim per replica")
	}
	sel := s.Spec.Selector.MatchLabels
	for k, v := range sel {
		if s.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template", k, v)
		}
	}
	if len(s.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("one container expected")
	}
	c := s.Spec.Template.Spec.Containers[0]
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("probe not on /health: %+v", p)
		}
	}
	if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("no resource limits")
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"daemon", "--rootDir /var/workspace", "--port 3001", "--auth-token-file /var/run/agentbe/token"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "--auth-token ") {
		t.Error("token on the command line (visible in ps)")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["workspace"] != "/var/workspace" || mounts["token"] != "/var/run/agentbe" {
		t.Errorf("mounts %v", mounts)
	}
	var secretVol bool
	for _, v := range s.Spec.Template.Spec.Volumes {
		if v.Name == "token" && v.Secret != nil && v.Secret.SecretName == "agentbe-token" {
			secretVol = true
		}
	}
	if !secretVol {
		t.Error("token not mounted from the Secret")
	}
	if s.Spec.Template.Spec.AutomountServiceAccountToken == nil || *s.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Error("the service account token would be readable by agents' commands")
	}
}

func TestService(t *testing.T) {
	var s corev1.Service
	decodeStrict(t, "service.yaml", &s)
	if s.Spec.ClusterIP != "None" {
		t.Error("service is not headless")
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 3001 {
		t.Errorf("ports %+v", s.Spec.Ports)
	}
	if s.Spec.Selector["app.kubernetes.io/name"] != "agentbe" {
		t.Errorf("selector %v", s.Spec.Selector)
	}
}

func TestSecret(t *testing.T) {
	var s corev1.Secret
	decodeStrict(t, "secret.yaml", &s)
	if s.Name != "agentbe-token" || s.StringData["token"] == "" {
		t.Errorf("secret %s lacks a token", s.Name)
	}
}

func TestNetworkPolicy(t *testing.T) {
	var p networkingv1.NetworkPolicy
	decodeStrict(t, "networkpolicy.yaml", &p)
	if p.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "agentbe" {
		t.Error("policy does not select the daemons")
	}
	if len(p.Spec.Ingress) != 1 || len(p.Spec.Ingress[0].Ports) != 1 || p.Spec.Ingress[0].Ports[0].Port.IntValue() != 3001 {
		t.Errorf("ingress %+v", p.Spec.Ingress)
	}
}

// TestStrictDecodingCatchesTypos proves the check is strict.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	var s corev1.Service
	for _, doc := range []string{
		"apiVersion: v1\nkind: Service\nspec:\n  clusterIp: None\n",
		"apiVersion: v1\nkind: Service\nspec:\n  clusterIP: None\n  bogus: 1\n",
		"apiVersion: v1\nkind: Service\nspec:\n  ports: 3001\n",
	} {
		if err := strictUnmarshal([]byte(doc), &s); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
}
