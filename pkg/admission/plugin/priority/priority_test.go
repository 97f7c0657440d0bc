package priority

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/admission"
)

// The messages are kube-apiserver v1.29's for the same pods.
func TestAdmit_PriorityFromTheClass(t *testing.T) {
	five := int32(5)
	never := corev1.PreemptNever
	cases := []struct {
		name    string
		spec    corev1.PodSpec
		want    int32
		wantErr string
	}{
		{"no class", corev1.PodSpec{}, 0, ""},
		{"system class", corev1.PodSpec{PriorityClassName: "system-node-critical"}, 2000001000, ""},
		{"unknown class", corev1.PodSpec{PriorityClassName: "nope"}, 0, `pods "p" is forbidden: no PriorityClass with name nope was found`},
		{"own priority", corev1.PodSpec{Priority: &five}, 0, `pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{"own preemption policy", corev1.PodSpec{PreemptionPolicy: &never}, 0, `pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.spec}
			err := Plugin{}.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Name: "p", Object: pod})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || *pod.Spec.Priority != tc.want || *pod.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
				t.Fatalf("err %v, priority %v, policy %v", err, pod.Spec.Priority, pod.Spec.PreemptionPolicy)
			}
		})
	}
}
