package nodeagent

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand_ReplacesDefinedReferencesOnly(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"plain": "plain", "$(A)": "x", "$(A)-$(B)": "x-y", "$(C)": "$(C)", "$$(A)": "$(A)", "$(A": "$(A", "a$": "a$", "$A": "$A",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerEnv_ResolvesEveryKindOfSource(t *testing.T) {
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
	c.EnvFrom = []corev1.EnvFromSource{
		{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: &optional}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "CPU_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
		{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "KEY", ValueFrom: cmRef("cm", "k", false)},
		{Name: "NOKEY", ValueFrom: cmRef("cm", "absent", true)},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "password"}}},
		{Name: "COMBINED", Value: "$(NAME)@$(NODE) $(UNDEFINED)"},
	}
	eng := newFakeEngine()
	a, client := testAgent(t, eng)
	ctx := context.Background()
	_, _ = client.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	_, _ = client.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"password": []byte("pw")}}, metav1.CreateOptions{})
	info, _ := eng.Info(ctx)
	a.nodeStatus(corev1.NodeStatus{}, info, metav1.Now())
	env, err := a.containerEnv(ctx, pod, c)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.2", "KUBERNETES_SERVICE_PORT": "6443", "KUBERNETES_PORT": "tcp://10.0.0.2:6443",
		"CM_k": "v", "NAME": "p", "APP": "a", "NODE": "node-0", "HOST_IP": "10.0.0.1", "MEM_MI": "64", "CPU_M": "250", "CPU_LIMIT": "2",
		"KEY": "v", "PASSWORD": "pw", "COMBINED": "p@node-0 $(UNDEFINED)",
	} {
		if got, ok := env.lookup(name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
	if _, ok := env.lookup("NOKEY"); ok {
		t.Error("an optional missing key is set")
	}

	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: cmRef("cm", "absent", false)}}
	if _, err := a.containerEnv(ctx, pod, c); err == nil || !strings.Contains(err.Error(), "couldn't find key absent in ConfigMap ns/cm") {
		t.Errorf("missing key: %v", err)
	}
}
