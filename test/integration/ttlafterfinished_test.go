package integration

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// finishedJob creates a Job with ttl (nil: none) and marks it Complete.
func finishedJob(t *testing.T, ns, name string, ttl *int32) {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	created, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	created.Status.StartTime, created.Status.CompletionTime = &now, &now
	created.Status.Succeeded = 1
	created.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := srv.Client.BatchV1().Jobs(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestTTLAfterFinishedController_DeletesAFinishedJobOnceItsTTLExpires(t *testing.T) {
	// With its own account, so that its bootstrap role is what allows it;
	// the garbage collector finishes the foreground deletion.
	runManager(t, true, "ttl-after-finished", "garbagecollector")
	ns := newNamespace(t, "ttl")
	finishedJob(t, ns, "kept", ptr.To[int32](3600))
	finishedJob(t, ns, "untimed", nil)
	finishedJob(t, ns, "expired", ptr.To[int32](0))
	waitFor(t, "the expired Job to be deleted", func() (bool, error) {
		_, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "expired", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	for _, name := range []string{"kept", "untimed"} {
		if got, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("job %s: %v, deletionTimestamp %v; want it kept", name, err, got.GetDeletionTimestamp())
		}
	}
}
