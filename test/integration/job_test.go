package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/cronplane/cronplane/test/fakenode"
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

// succeed plays the kubelet for a pod no node runs: it reports the pod's
// containers done.
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

// parallelRuns is a fake node's runner that records how many containers
// ran at once and the pods as the node saw them start.
type parallelRuns struct {
	mu          sync.Mutex
	active, max int
	pods        []*corev1.Pod
}

func (r *parallelRuns) Start(_ context.Context, c *fakenode.Container) (fakenode.Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active++
	r.max = max(r.max, r.active)
	r.pods = append(r.pods, c.Pod)
	return &countedProcess{Process: fakenode.Sleep(200*time.Millisecond, 0), r: r}, nil
}

type countedProcess struct {
	fakenode.Process
	r    *parallelRuns
	once sync.Once
}

func (p *countedProcess) Wait() int32 {
	code := p.Process.Wait()
	p.once.Do(func() {
		p.r.mu.Lock()
		p.r.active--
		p.r.mu.Unlock()
	})
	return code
}

// The Job controller runs with its own account and role: it creates the
// pods one at a time (parallelism 1), each labelled as the Job's template,
// owned by the Job and holding the tracking finalizer; once both report
// success the Job is Complete with succeeded=2 and no pod keeps the
// finalizer.
func TestJobController_RunsPodsToCompletion(t *testing.T) {
	ns := newNamespace(t, "job-e2e")
	start(t, "job-solo", false)
	runs := &parallelRuns{}
	runFakeNode(t, runs)
	two, one := int32(2), int32(1)
	job, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Completions: &two, Parallelism: &one, Template: corev1.PodTemplateSpec{
			Spec: onFakeNode(corev1.RestartPolicyNever, corev1.Container{}),
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
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
	runs.mu.Lock()
	defer runs.mu.Unlock()
	if runs.max != 1 || len(runs.pods) != 2 {
		t.Fatalf("%d pods ran, at most %d at once; want 2, one at a time", len(runs.pods), runs.max)
	}
	for _, pod := range runs.pods {
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != job.UID || ref.Kind != "Job" || !*ref.BlockOwnerDeletion {
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
	}
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
