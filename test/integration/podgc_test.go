package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod deleted before any node was assigned to it, held by a finalizer,
// has no kubelet to finish it: the pod garbage collector, with its own
// account and role, patches its status to phase Failed (kube v1.29's
// collector leaves the same managedFields entry: kube-controller-manager,
// Update, status) and deletes it without grace; once the finalizer goes,
// so does the pod.
func TestPodGC_FailsAndDeletesUnscheduledTerminatingPod(t *testing.T) {
	ns := newNamespace(t, "podgc")
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods(ns)
	// The service account controller does not run here.
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck", Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runManager(t, true, "podgc")
	waitFor(t, "the pod Failed", func() (bool, error) {
		p, err := pods.Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range p.ManagedFields {
			if e.Manager == "kube-controller-manager" && e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationUpdate {
				return p.Status.Phase == corev1.PodFailed, nil
			}
		}
		return false, nil
	})
	if _, err := pods.Patch(ctx, "stuck", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod gone", func() (bool, error) {
		_, err := pods.Get(ctx, "stuck", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
