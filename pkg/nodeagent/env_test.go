package nodeagent

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent puts the apiserver's service variables first, then what the
// container asks for, a limit it does not set being the node's
// allocatable.
func TestContainerEnv_ServiceVariablesThenTheContainersOwn(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := &corev1.Container{Name: "c", Env: []corev1.EnvVar{
		{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
	}}
	eng := newFakeEngine()
	a, _ := testAgent(t, eng)
	ctx := context.Background()
	info, _ := eng.Info(ctx)
	a.nodeStatus(corev1.NodeStatus{}, info, metav1.Now())
	env, err := a.containerEnv(ctx, pod, c)
	if err != nil {
		t.Fatal(err)
	}
	list := env.List()
	if len(list) == 0 || list[0] != "KUBERNETES_SERVICE_HOST=10.0.0.2" {
		t.Fatalf("env %q", list)
	}
	for name, want := range map[string]string{
		"KUBERNETES_SERVICE_PORT": "6443", "KUBERNETES_PORT": "tcp://10.0.0.2:6443", "KUBERNETES_PORT_6443_TCP_ADDR": "10.0.0.2",
		"CPU_LIMIT": "2", "MEM_LIMIT": "3996", "API": "10.0.0.2:6443",
	} {
		if got, ok := env.Lookup(name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
}
