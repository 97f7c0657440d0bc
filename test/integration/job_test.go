package integration

import (
	"context"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

const jobTrackingFinalizer = "batch.kubernetes.io/job-tracking"

func podsOf(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := srv.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// succeed plays the kubelet: it reports the pod's containers done.
func succeed(t *testing.T, pod corev1.Pod) {
	t.Helper()
	now := metav1.Now()
	pods := srv.Client.CoreV1().Pods(pod.Namespace)
	// The scheduler writes the status of pods no node takes, as a
	// kubelet's status write races other writers: read again on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = corev1.PodSucceeded
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}
		_, err = pods.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// running returns the Job's pods not finished yet.
func running(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, p := range podsOf(t, ns) {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// The Job controller runs with its own account and role: it creates the
// pods one at a time (parallelism 1), each labelled as the Job's template,
// owned by the Job and holding the tracking finalizer; once both report
// success the Job is Complete with succeeded=2 and no pod keeps the
// finalizer.
func TestJobController_RunsPodsToCompletion(t *testing.T) {
	ns := newNamespace(t, "job-e2e")
	start(t, "job-solo", false)
	two, one := int32(2), int32(1)
	job, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Completions: &two, Parallelism: &one, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		waitFor(t, "a running pod", func() (bool, error) { return len(running(t, ns)) == 1, nil })
		pod := running(t, ns)[0]
		if ref := metav1.GetControllerOf(&pod); ref == nil || ref.UID != job.UID || ref.Kind != "Job" || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s owners %+v", pod.Name, pod.OwnerReferences)
		}
		for k, v := range job.Spec.Template.Labels {
			if pod.Labels[k] != v {
				t.Fatalf("pod labels %v lack the template's %s=%s", pod.Labels, k, v)
			}
		}
		if !slices.Contains(pod.Finalizers, jobTrackingFinalizer) {
			t.Fatalf("pod finalizers %v", pod.Finalizers)
		}
		succeed(t, pod)
		// Parallelism 1: the next pod only once this one is counted.
		waitFor(t, "the pod counted", func() (bool, error) {
			got, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "pi", metav1.GetOptions{})
			return err == nil && got.Status.Succeeded == int32(i+1), err
		})
	}
	waitFor(t, "the Job Complete", func() (bool, error) {
		got, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "pi", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return got.Status.Succeeded == 2 && got.Status.Active == 0 && got.Status.CompletionTime != nil, nil
			}
		}
		return false, nil
	})
	pods := podsOf(t, ns)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, p := range pods {
		if slices.Contains(p.Finalizers, jobTrackingFinalizer) {
			t.Fatalf("pod %s keeps the tracking finalizer", p.Name)
		}
	}
}

// A CronJob's Job gets its pods: the CronJob and Job controllers chain.
func TestJobController_RunsTheJobOfACronJob(t *testing.T) {
	ns := newNamespace(t, "cronjob-chain")
	start(t, "chain-solo", false)
	createCronJob(t, ns, "chain")
	waitFor(t, "a Job", func() (bool, error) { return len(jobsOf(t, ns)) == 1, nil })
	job := jobsOf(t, ns)[0]
	waitFor(t, "a pod of the Job", func() (bool, error) {
		for _, p := range podsOf(t, ns) {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == job.UID {
				return p.Labels["job-name"] == job.Name, nil
			}
		}
		return false, nil
	})
	waitFor(t, "the Job active", func() (bool, error) {
		got, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		return err == nil && got.Status.Active == 1, err
	})
}
