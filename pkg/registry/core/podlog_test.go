package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLogContainer_PicksOrRefusesAsKube(t *testing.T) {
	pod := func(names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	for _, tc := range []struct {
		pod     *corev1.Pod
		name    string
		want    string
		wantErr string
	}{
		{pod("a"), "", "a", ""},
		{pod("a", "b"), "", "", "a container name must be specified for pod p, choose one of: [init a b]"},
		{pod(), "", "", "a container name must be specified for pod p"},
		{pod("a", "b"), "b", "b", ""},
		{pod("a"), "init", "init", ""},
		{pod("a"), "c", "", "container c is not valid for pod p"},
	} {
		got, err := logContainer(tc.pod, tc.name)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && (err.Error() != tc.wantErr || !apierrors.IsBadRequest(err))) {
			t.Errorf("%q in %v: got %q, %v; want %q, %q", tc.name, tc.pod.Spec.Containers, got, err, tc.want, tc.wantErr)
		}
	}
}
