package defaulttolerations

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

func TestAdmit_AddsWhatThePodDoesNotTolerate(t *testing.T) {
	kube := Plugin{NotReadySeconds: Seconds, UnreachableSeconds: Seconds}
	cases := []struct {
		name   string
		plugin Plugin
		own    []corev1.Toleration
		want   []string
	}{
		{"none", kube, nil, []string{"node.kubernetes.io/not-ready:NoExecute:300", "node.kubernetes.io/unreachable:NoExecute:300"}},
		{"none, with the seconds of the flags", Plugin{NotReadySeconds: 20, UnreachableSeconds: 8}, nil,
			[]string{"node.kubernetes.io/not-ready:NoExecute:20", "node.kubernetes.io/unreachable:NoExecute:8"}},
		{"everything tolerated", kube, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, []string{":"}},
		{"not-ready tolerated for any effect", kube, []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}},
			[]string{"node.kubernetes.io/not-ready:", "node.kubernetes.io/unreachable:NoExecute:300"}},
		{"unreachable tolerated for NoSchedule only", kube, []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}},
			[]string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/not-ready:NoExecute:300", "node.kubernetes.io/unreachable:NoExecute:300"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.own}}
			err := tc.plugin.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: pod})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tol := range pod.Spec.Tolerations {
				s := tol.Key + ":" + string(tol.Effect)
				if tol.TolerationSeconds != nil {
					s += fmt.Sprintf(":%d", *tol.TolerationSeconds)
				}
				got = append(got, s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("tolerations %v, want %v", got, tc.want)
			}
		})
	}
}
