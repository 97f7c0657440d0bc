package nodetaint

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

func TestAdmit_NewNodesAreNotReadyForScheduling(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	cases := []struct {
		name string
		own  []corev1.Taint
		want []corev1.Taint
	}{
		{"untainted", nil, []corev1.Taint{notReady}},
		{"tainted otherwise", []corev1.Taint{other, noExecute}, []corev1.Taint{other, noExecute, notReady}},
		{"already not ready", []corev1.Taint{notReady}, []corev1.Taint{notReady}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.own}}
			err := Plugin{}.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Object: node})
			if err != nil {
				t.Fatal(err)
			}
			if len(node.Spec.Taints) != len(tc.want) {
				t.Fatalf("taints %+v, want %+v", node.Spec.Taints, tc.want)
			}
			for i := range tc.want {
				if node.Spec.Taints[i] != tc.want[i] {
					t.Fatalf("taints %+v, want %+v", node.Spec.Taints, tc.want)
				}
			}
		})
	}
}
