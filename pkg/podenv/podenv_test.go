package podenv

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestExpand_ReplacesDefinedReferencesOnly(t *testing.T) {
	env := &Env{}
	env.Set("A", "x")
	env.Set("B", "y")
	for in, want := range map[string]string{
		"plain": "plain", "$(A)": "x", "$(A)-$(B)": "x-y", "$(C)": "$(C)", "$$(A)": "$(A)", "$(A": "$(A", "a$": "a$", "$A": "$A",
	} {
		if got := Expand(in, env.Lookup); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnv_ALaterDefinitionReplacesTheValueInPlace(t *testing.T) {
	env := &Env{}
	env.Set("A", "1")
	env.Set("B", "2")
	env.Set("A", "3")
	if got, want := env.List(), []string{"A=3", "B=2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List() = %q, want %q", got, want)
	}
	if got := env.ExpandAll([]string{"$(A)$(B)"}); !reflect.DeepEqual(got, []string{"32"}) {
		t.Fatalf("ExpandAll = %q", got)
	}
}

func TestResolve_ResolvesEveryKindOfSource(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{NodeName: "node-0", ServiceAccountName: "sa"},
		Status:     corev1.PodStatus{HostIP: "10.0.0.1", PodIP: "172.17.0.2"},
	}
	c := &corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}
	optional := true
	cmRef := func(name, key string, opt bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &opt}}
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	c.EnvFrom = []corev1.EnvFromSource{
		{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: &optional}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "NAME", ValueFrom: field("metadata.name")},
		{Name: "APP", ValueFrom: field("metadata.labels['app']")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "CPU_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
		{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM_REQUEST", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory"}}},
		{Name: "KEY", ValueFrom: cmRef("cm", "k", false)},
		{Name: "NOKEY", ValueFrom: cmRef("cm", "absent", true)},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "password"}}},
		{Name: "COMBINED", Value: "$(NAME)@$(NODE) $(UNDEFINED)"},
	}
	client := fake.NewSimpleClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"password": []byte("pw")}},
	)
	r := Resolver{Client: client, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	ctx := context.Background()
	env := &Env{}
	if err := r.Resolve(ctx, pod, c, env); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"CM_k": "v", "NAME": "p", "APP": "a", "NODE": "node-0", "HOST_IP": "10.0.0.1", "POD_IP": "172.17.0.2",
		"MEM_MI": "64", "CPU_M": "250", "CPU_LIMIT": "2", "MEM_REQUEST": "0",
		"KEY": "v", "PASSWORD": "pw", "COMBINED": "p@node-0 $(UNDEFINED)",
	} {
		if got, ok := env.Lookup(name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
	if _, ok := env.Lookup("NOKEY"); ok {
		t.Error("an optional missing key is set")
	}

	for _, tc := range []struct {
		env  corev1.EnvVar
		want string
	}{
		{corev1.EnvVar{Name: "X", ValueFrom: cmRef("cm", "absent", false)}, "couldn't find key absent in ConfigMap ns/cm"},
		{corev1.EnvVar{Name: "X", ValueFrom: field("spec.unknown")}, "unsupported fieldPath: spec.unknown"},
		{corev1.EnvVar{Name: "X", ValueFrom: cmRef("nocm", "k", false)}, `configmaps "nocm" not found`},
	} {
		c.EnvFrom, c.Env = nil, []corev1.EnvVar{tc.env}
		if err := r.Resolve(ctx, pod, c, &Env{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.env.ValueFrom, err, tc.want)
		}
	}
}
