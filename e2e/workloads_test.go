//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// namespaceGoneOnExit deletes the namespace when the test ends and
// waits until the namespace controller has emptied and removed it.
func namespaceGoneOnExit(t *testing.T, c kubernetes.Interface, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		start := time.Now()
		if err := c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
			return
		}
		for time.Since(start) < 120*time.Second {
			if _, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Logf("namespace %s deleted, its objects with it, in %v", name, time.Since(start).Round(time.Millisecond))
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("namespace %s still there 120s after its deletion", name)
	})
}

func jobCondition(j *batchv1.Job, cond batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == cond && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// jobPods are the pods of a Job, oldest first.
func jobPods(t *testing.T, c kubernetes.Interface, ns, job string) []corev1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp)
	})
	return pods.Items
}

// quantiles are the median and the largest of durations.
func quantiles(ds []time.Duration) (p50, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[len(ds)-1]
}

// Twenty CronJobs every minute for three scheduled times: every Job is
// Complete with one pod and no failure, each CronJob has exactly one Job
// per scheduled time, and every pod's log is readable and what it
// printed. It runs through the faults of TestOverlapped.
func cronJobsTwentyEveryMinuteForThreeMinutesEachRunOnceAndLogged(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	const ns, cronJobs, minutes = "e2e-cron20", 20, 3
	namespace(t, c, ns)
	namespaceGoneOnExit(t, c, ns)
	history := int32(10)
	created := map[string]time.Time{}
	for i := 0; i < cronJobs; i++ {
		name := fmt.Sprintf("c%02d", i)
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.CronJobSpec{
				Schedule:                   "*/1 * * * *",
				SuccessfulJobsHistoryLimit: &history,
				FailedJobsHistoryLimit:     &history,
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"echo", "run of " + name}}},
				}}}},
			},
		}
		got, err := c.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[name] = got.CreationTimestamp.Time
	}
	// The scheduled times after the last creation; those created before
	// a minute's turn may have one more, at the start.
	createdLast := created[fmt.Sprintf("c%02d", cronJobs-1)]
	first := createdLast.Truncate(time.Minute).Add(time.Minute)
	last := first.Add((minutes - 1) * time.Minute)
	t.Logf("%d CronJobs created in %v, by %s; scheduled times %s to %s", cronJobs, createdLast.Sub(created["c00"]), createdLast.Format("15:04:05"), first.Format("15:04"), last.Format("15:04"))

	// Each CronJob's Job for the last time is made: suspend them all, so
	// that the count is exact, then wait for every Job to finish.
	time.Sleep(time.Until(last))
	eventually(t, 60*time.Second, fmt.Sprintf("a Job of each CronJob for %s", last.Format("15:04")), func() bool {
		jobs, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, j := range jobs.Items {
			at, err := time.Parse(time.RFC3339, j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
			if owner := metav1.GetControllerOf(&j); err == nil && at.Equal(last) && owner != nil {
				have[owner.Name] = true
			}
		}
		return len(have) == cronJobs
	})
	for i := 0; i < cronJobs; i++ {
		if _, err := c.BatchV1().CronJobs(ns).Patch(ctx, fmt.Sprintf("c%02d", i), types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var jobs *batchv1.JobList
	eventually(t, 120*time.Second, "every Job finished", func() bool {
		var err error
		jobs, err = c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range jobs.Items {
			if jobCondition(&jobs.Items[i], batchv1.JobComplete) == nil && jobCondition(&jobs.Items[i], batchv1.JobFailed) == nil {
				return false
			}
		}
		return true
	})
	t.Logf("%d Jobs finished %v after the last scheduled time", len(jobs.Items), time.Since(last).Round(time.Millisecond))

	// One Job per CronJob and scheduled time, every minute from the first
	// to the last; each Complete with one pod, none failed.
	times := map[string][]time.Time{}
	var toCreate, toComplete []time.Duration
	for i := range jobs.Items {
		j := &jobs.Items[i]
		owner := metav1.GetControllerOf(j)
		at, err := time.Parse(time.RFC3339, j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
		if owner == nil || err != nil {
			t.Fatalf("Job %s: owner %v, scheduled time %v", j.Name, owner, err)
		}
		times[owner.Name] = append(times[owner.Name], at)
		complete := jobCondition(j, batchv1.JobComplete)
		if complete == nil || j.Status.Succeeded != 1 || j.Status.Failed != 0 {
			t.Errorf("Job %s: complete %v, %d succeeded, %d failed; want Complete, 1 and 0", j.Name, complete != nil, j.Status.Succeeded, j.Status.Failed)
			continue
		}
		toCreate = append(toCreate, j.CreationTimestamp.Sub(at))
		toComplete = append(toComplete, complete.LastTransitionTime.Sub(at))
	}
	if len(times) != cronJobs {
		t.Errorf("Jobs of %d CronJobs, want %d", len(times), cronJobs)
	}
	for name, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		var want []time.Time
		for m := created[name].Truncate(time.Minute).Add(time.Minute); !m.After(ts[len(ts)-1]); m = m.Add(time.Minute) {
			want = append(want, m)
		}
		if fmt.Sprint(ts) != fmt.Sprint(want) || ts[len(ts)-1].Before(last) {
			t.Errorf("CronJob %s has Jobs for %v, want one for each minute from %s to %s at least", name, ts, first.Format("15:04"), last.Format("15:04"))
		}
	}
	p50c, maxc := quantiles(toCreate)
	p50d, maxd := quantiles(toComplete)
	t.Logf("%d Jobs, one per CronJob and scheduled time, all Complete: created %v after their time (median; %v at most), Complete %v after it (%v at most)",
		len(jobs.Items), p50c.Round(time.Millisecond), maxc.Round(time.Millisecond), p50d.Round(time.Millisecond), maxd.Round(time.Millisecond))

	// Every pod's log, read through the balancer, four at a time.
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(jobs.Items) {
		t.Errorf("%d pods for %d Jobs, want one each", len(pods.Items), len(jobs.Items))
	}
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	nodes := map[string]int{}
	for _, p := range pods.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func(p corev1.Pod) {
			defer wg.Done()
			defer func() { <-sem }()
			cronJob, _, _ := strings.Cut(p.Labels["job-name"], "-")
			logs, err := c.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			mu.Lock()
			defer mu.Unlock()
			nodes[p.Spec.NodeName]++
			if want := "run of " + cronJob + "\n"; err != nil || string(logs) != want {
				t.Errorf("log of %s: %q %v, want %q", p.Name, logs, err, want)
			}
		}(p)
	}
	wg.Wait()
	t.Logf("the logs of all %d pods read in %v; pods per node %v", len(pods.Items), time.Since(start).Round(time.Millisecond), nodes)
}

// A container over its memory limit is OOMKilled, which the pod's status
// says (reason OOMKilled, exit code 137), and the Job replaces each
// failed pod after kube's backoff (10 s, then 20 s, from the failed
// container's finish) until backoffLimit, then fails with
// BackoffLimitExceeded.
func jobContainerOverItsMemoryLimitIsOOMKilledAndTheBackoffApplies(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	const ns, backoffLimit = "e2e-oom", 2
	namespace(t, c, ns)
	namespaceGoneOnExit(t, c, ns)
	limit := resource.MustParse("16Mi")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "oom"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(backoffLimit)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "hog", Image: "busybox",
					// dd reads 64 MiB from /dev/zero into one buffer: its pages
					// are charged to the container's cgroup, four times its limit.
					Command:   []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: limit}},
				}},
			}},
		},
	}
	if _, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var failed *batchv1.Job
	took := eventually(t, 150*time.Second, "the Job Failed", func() bool {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "oom", metav1.GetOptions{})
		if err != nil || jobCondition(j, batchv1.JobFailed) == nil {
			return false
		}
		failed = j
		return true
	})
	cond := jobCondition(failed, batchv1.JobFailed)
	if cond.Reason != "BackoffLimitExceeded" || failed.Status.Failed != backoffLimit+1 || failed.Status.Succeeded != 0 {
		t.Errorf("the Job Failed with reason %s, %d failed, %d succeeded; want BackoffLimitExceeded, %d, 0", cond.Reason, failed.Status.Failed, failed.Status.Succeeded, backoffLimit+1)
	}
	t.Logf("the Job Failed (%s: %s) %v after its creation, %d pods failed", cond.Reason, cond.Message, took.Round(time.Millisecond), failed.Status.Failed)

	pods := jobPods(t, c, ns, "oom")
	if len(pods) != backoffLimit+1 {
		t.Fatalf("%d pods, want %d", len(pods), backoffLimit+1)
	}
	var prevFinish time.Time
	for i, p := range pods {
		if p.Status.Phase != corev1.PodFailed || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod %s: %s with %d container statuses, want Failed with 1", p.Name, p.Status.Phase, len(p.Status.ContainerStatuses))
		}
		cs := p.Status.ContainerStatuses[0]
		term := cs.State.Terminated
		if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 || cs.RestartCount != 0 {
			t.Fatalf("pod %s's container: %+v, restarts %d; want terminated OOMKilled with exit code 137, no restart", p.Name, cs.State, cs.RestartCount)
		}
		// The replacement's wait, from the failed container's finish to
		// the next pod's creation (both to the second): the backoff
		// doubles with each failure.
		if i > 0 {
			gap := p.CreationTimestamp.Sub(prevFinish)
			backoff := 10 * time.Second << (i - 1)
			if gap < backoff-time.Second || gap > backoff+15*time.Second {
				t.Errorf("pod %d created %v after pod %d finished, want the backoff %v (up to 15 s late on this machine)", i, gap, i-1, backoff)
			}
			t.Logf("pod %d (%s, on %s) created %v after pod %d's container was OOMKilled (backoff %v)", i, p.Name, p.Spec.NodeName, gap, i-1, backoff)
		} else {
			t.Logf("pod 0 (%s, on %s): container %s, exit code %d, ran %v", p.Name, p.Spec.NodeName, term.Reason, term.ExitCode, term.FinishedAt.Sub(term.StartedAt.Time))
		}
		prevFinish = term.FinishedAt.Time
	}
}
