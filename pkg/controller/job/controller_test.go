package job

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

func TestSync_WaitsForTheInformerToShowItsPods(t *testing.T) {
	f := newFixture(t, newJob(2, 2))
	f.mustSync()
	if n := len(f.createdPods()); n != 2 {
		t.Fatalf("created %d", n)
	}
	// The cache shows none of them yet: no second pair.
	f.reset()
	f.mustSync()
	if n := len(f.createdPods()); n != 0 {
		t.Fatalf("created %d more pods from a stale cache", n)
	}
	for _, p := range f.storedPods() {
		f.cache(p)
		f.c.addPod(p)
	}
	f.reset()
	f.mustSync()
	if n := len(f.createdPods()); n != 0 || f.stored().Status.Active != 2 {
		t.Fatalf("created %d, status %+v", n, f.stored().Status)
	}
}

func TestSync_SlowStartStopsAtTheFirstRefusal(t *testing.T) {
	f := newFixture(t, newJob(10, 10))
	refused := 0
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		refused++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
	})
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	if refused != 1 {
		t.Errorf("tried %d creations, want the first batch of one", refused)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"FailedCreate"}) {
		t.Errorf("events %v", got)
	}
	if !f.c.expectations.satisfied("ns/j") {
		t.Error("expectations wait for pods never created")
	}
	if got := f.stored().Status.Active; got != 0 {
		t.Errorf("active %d", got)
	}
}

func TestSync_SlowStartDoublesTheBatches(t *testing.T) {
	f := newFixture(t, newJob(10, 10))
	n := 0
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		n++
		if n == 5 {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		}
		return false, nil, nil
	})
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	// Batches of 1, 2, then 4 of which one fails: 7 tried, 3 never.
	if n != 7 || len(f.storedPods()) != 6 || f.stored().Status.Active != 6 {
		t.Errorf("tried %d, stored %d, status %+v", n, len(f.storedPods()), f.stored().Status)
	}
}

func TestSync_FinishedJobIsLeftAlone(t *testing.T) {
	job := started(newJob(1, 1))
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	f := newFixture(t, job, newPod("a", corev1.PodRunning))
	f.mustSync()
	if calls := f.calls(); len(calls) != 0 {
		t.Errorf("calls %v", calls)
	}
}

func TestSync_UnknownCompletionModeIsReported(t *testing.T) {
	job := newJob(1, 1)
	job.Spec.CompletionMode = ptrTo(batchv1.CompletionMode("Sideways"))
	f := newFixture(t, job)
	f.mustSync()
	if got := f.events(); !reflect.DeepEqual(got, []string{"Warning UnknownCompletionMode Skipped Job sync because completion mode is unknown"}) {
		t.Errorf("events %v", got)
	}
	if calls := f.calls(); len(calls) != 0 {
		t.Errorf("calls %v", calls)
	}
}

func TestSync_CompletionsUnsetCompletesWhenOneSucceedsAndTheRestEnd(t *testing.T) {
	job := started(newJob(2, -1))
	f := newFixture(t, job, newPod("a", corev1.PodSucceeded), newPod("b", corev1.PodRunning))
	f.mustSync()
	if conditionOf(f.stored(), batchv1.JobComplete) != nil || len(f.createdPods()) != 0 {
		t.Fatalf("complete with a pod running, or created %d", len(f.createdPods()))
	}
	if err := f.pods.Delete(newPod("a", corev1.PodSucceeded)); err != nil {
		t.Fatal(err)
	}
	f.cache(newPod("b", corev1.PodFailed, finishedAt(t0, 1)))
	f.mustSync()
	final := f.stored()
	if conditionOf(final, batchv1.JobComplete) == nil || final.Status.Succeeded != 1 || final.Status.Failed != 1 {
		t.Fatalf("status %+v", final.Status)
	}
}

func TestSync_StatusWrittenFromAStaleCacheIsNotRefused(t *testing.T) {
	// The first sync writes the status; the informer still shows the Job
	// as before. The second sync must start from what was written.
	f := newFixture(t, newJob(1, 1))
	f.mustSync()
	for _, p := range f.storedPods() {
		p := p.DeepCopy()
		p.Status.Phase = corev1.PodSucceeded
		f.cache(p)
		f.c.addPod(p)
	}
	f.reset()
	if err := f.sync(); err != nil {
		t.Fatalf("sync from the stale cache: %v", err)
	}
	if conditionOf(f.stored(), batchv1.JobComplete) == nil {
		t.Fatalf("status %+v", f.stored().Status)
	}
	// Once the informer catches up, its copy is used again.
	f.cache(f.stored())
	if _, ok := f.c.written.jobs["ns/j"]; !ok {
		t.Fatal("nothing remembered")
	}
	f.mustSync()
	if _, ok := f.c.written.jobs["ns/j"]; ok {
		t.Error("the written Job outlives the informer's catching up")
	}
}

func TestWrittenJobs_AnotherWriterWins(t *testing.T) {
	w := newWrittenJobs()
	base := newJob(1, 1)
	mine := base.DeepCopy()
	mine.ResourceVersion = "2"
	w.record("ns/j", "1", mine)
	if got := w.freshest("ns/j", base); got != mine {
		t.Error("stale cache preferred")
	}
	theirs := base.DeepCopy()
	theirs.ResourceVersion = "3"
	if got := w.freshest("ns/j", theirs); got != theirs {
		t.Error("a newer version lost to the remembered one")
	}
	recreated := base.DeepCopy()
	recreated.UID = "other"
	w.record("ns/j", "1", mine)
	if got := w.freshest("ns/j", recreated); got != recreated {
		t.Error("a Job of another UID got the remembered status")
	}
}

func TestSync_DeletedJobForgetsItsState(t *testing.T) {
	f := newFixture(t, newJob(1, 1))
	f.c.expectations.expectCreations("ns/j", 3)
	f.c.backoffs.set("ns/j", backoffRecord{failures: 2, lastFailure: t0})
	if err := f.jobs.Delete(newJob(1, 1)); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	if !f.c.expectations.satisfied("ns/j") || f.c.backoffs.get("ns/j").failures != 0 {
		t.Error("state of a deleted Job kept")
	}
}

func TestHandlers_PodEventsQueueTheirJob(t *testing.T) {
	f := newFixture(t, newJob(1, 1))
	f.c.expectations.expectCreations("ns/j", 1)
	p := newPod("a", corev1.PodPending)
	f.c.addPod(p)
	if !f.c.expectations.satisfied("ns/j") {
		t.Error("creation not observed")
	}
	f.clock.Step(podSyncDelay)
	if !waitFor(func() bool { return f.c.queue.Len() == 1 }) {
		t.Fatal("job not queued")
	}

	// A pod whose finalizer went: the removal is observed.
	f.c.expectations.expectFinalizersRemoved("ns/j", []types.UID{p.UID})
	cur := p.DeepCopy()
	cur.ResourceVersion = "2"
	cur.Finalizers = nil
	f.c.updatePod(p, cur)
	if len(f.c.expectations.removingFinalizers("ns/j")) != 0 {
		t.Error("finalizer removal not observed")
	}

	// A deleted pod of an unfinished Job: its deletion is observed.
	f.c.expectations.expectDeletions("ns/j", 1)
	f.c.deletePod(cur, true)
	if !f.c.expectations.satisfied("ns/j") {
		t.Error("deletion not observed")
	}
}

func TestHandlers_OrphanWithFinalizerGoesToTheOrphanQueue(t *testing.T) {
	f := newFixture(t, newJob(1, 1))
	p := newPod("a", corev1.PodRunning, orphan)
	p.Finalizers = []string{batchv1.JobTrackingFinalizer}
	f.c.addPod(p)
	if f.c.orphans.Len() != 1 {
		t.Error("orphan not queued")
	}
	// It also matches the Job's selector: the Job is queued to adopt it.
	f.clock.Step(podSyncDelay)
	if !waitFor(func() bool { return f.c.queue.Len() == 1 }) {
		t.Error("selecting Job not queued")
	}
}

func TestHandlers_SpecChangeSyncsAtOnceAndNewDeadlineIsScheduled(t *testing.T) {
	f := newFixture(t, newJob(1, 1))
	old := started(newJob(1, 1))
	cur := old.DeepCopy()
	cur.Generation = 2
	cur.Spec.ActiveDeadlineSeconds = ptrTo(int64(120))
	f.c.updateJob(old, cur)
	if f.c.queue.Len() != 1 {
		t.Fatal("spec change not synced at once")
	}
	key, _ := f.c.queue.Get()
	f.c.queue.Done(key)
	// t0 + 2 minutes is the deadline; the clock is at t0 + 1 minute.
	f.clock.Step(59 * time.Second)
	if f.c.queue.Len() != 0 {
		t.Fatal("deadline sync early")
	}
	f.clock.Step(time.Second)
	if !waitFor(func() bool { return f.c.queue.Len() == 1 }) {
		t.Fatal("no sync at the new deadline")
	}
}

func TestSyncOrphan_RemovesTheFinalizerOfPodsNoLiveJobControls(t *testing.T) {
	finished := started(newJob(1, 1))
	finished.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	gone := newPod("gone", corev1.PodSucceeded)
	gone.OwnerReferences[0].UID = "deleted-job"
	cases := []struct {
		name   string
		job    *batchv1.Job
		pod    *corev1.Pod
		patch  bool
		reason string
	}{
		{name: "orphan", job: newJob(1, 1), pod: newPod("a", corev1.PodSucceeded, func(p *corev1.Pod) { p.OwnerReferences = nil }), patch: true},
		{name: "controller deleted", job: newJob(1, 1), pod: gone, patch: true},
		{name: "Job finished", job: finished, pod: newPod("a", corev1.PodSucceeded), patch: true},
		{name: "Job running", job: newJob(1, 1), pod: newPod("a", corev1.PodSucceeded)},
		{name: "finalizer removed already, cache stale", job: finished, pod: newPod("removing", corev1.PodSucceeded)},
		{name: "owned by something else", job: newJob(1, 1), pod: newPod("a", corev1.PodSucceeded, func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "ReplicaSet" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.job, tc.pod)
			if tc.pod.Name == "removing" {
				f.c.expectations.expectFinalizersRemoved("ns/j", []types.UID{tc.pod.UID})
			}
			if err := f.c.syncOrphan(context.Background(), "ns/"+tc.pod.Name); err != nil {
				t.Fatal(err)
			}
			if got := count(f.calls(), "patch pods "+tc.pod.Name) == 1; got != tc.patch {
				t.Errorf("patched %v, want %v", got, tc.patch)
			}
		})
	}
}

func TestNew_SharesIndexesWithAnotherController(t *testing.T) {
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	for i := 0; i < 2; i++ {
		if _, err := New(client, factory.Batch().V1().Jobs(), factory.Core().V1().Pods(), record.NewFakeRecorder(1), nil); err != nil {
			t.Fatalf("controller %d: %v", i, err)
		}
	}
}

// fakeNode finishes every pod of the namespace that w shows created, as a
// kubelet would.
func fakeNode(ctx context.Context, client *fake.Clientset, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || p.Status.Phase != "" || p.DeletionTimestamp != nil {
				continue
			}
			p = p.DeepCopy()
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Now()}}}}
			_, _ = client.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
	}
}

func TestRun_JobsCompleteOverInformers(t *testing.T) {
	client := fake.NewSimpleClientset()
	n := 0
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		n++
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n)
		pod.UID = types.UID(pod.Name)
		pod.ResourceVersion = "1"
		return true, pod, client.Tracker().Create(podsGVR, pod, pod.Namespace)
	})
	// The fake clientset replays nothing to a watch: objects created
	// before the informers watch would never reach them, so the Jobs are
	// created once each watch is registered.
	watches := make(chan string, 8)
	client.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		select {
		case watches <- action.GetResource().Resource:
		default:
		}
		return true, w, err
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Batch().V1().Jobs(), factory.Core().V1().Pods(), record.NewFakeRecorder(1000), clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := client.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-watches
	go fakeNode(ctx, client, w)
	factory.Start(ctx.Done())
	go c.Run(ctx, 2)
	for seen := map[string]bool{}; !seen["jobs"] || !seen["pods"]; {
		select {
		case r := <-watches:
			seen[r] = true
		case <-ctx.Done():
			t.Fatal("the informers did not watch")
		}
	}

	for i := 0; i < 5; i++ {
		job := newJob(2, 3)
		job.Name, job.UID = fmt.Sprintf("j%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		job.Spec.Selector.MatchLabels = map[string]string{batchv1.ControllerUidLabel: string(job.UID)}
		job.Spec.Template.Labels = job.Spec.Selector.MatchLabels
		if i == 4 {
			job.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
		}
		if _, err := client.BatchV1().Jobs("ns").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done := func() bool {
		jobs, err := client.BatchV1().Jobs("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, j := range jobs.Items {
			if conditionOf(&j, batchv1.JobComplete) == nil || j.Status.Succeeded != 3 {
				return false
			}
		}
		return len(jobs.Items) == 5
	}
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			jobs, _ := client.BatchV1().Jobs("ns").List(ctx, metav1.ListOptions{})
			for _, j := range jobs.Items {
				t.Logf("%s: %+v", j.Name, j.Status)
			}
			t.Fatal("Jobs not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pods, _ := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 15 {
		t.Errorf("%d pods for 5 Jobs of 3 completions", len(pods.Items))
	}
	for _, p := range pods.Items {
		if hasTrackingFinalizer(&p) {
			t.Errorf("pod %s keeps its finalizer", p.Name)
		}
	}
	j4, _ := client.BatchV1().Jobs("ns").Get(ctx, "j4", metav1.GetOptions{})
	if j4.Status.CompletedIndexes != "0-2" {
		t.Errorf("completed indexes %q", j4.Status.CompletedIndexes)
	}
}

func TestSync_TerminatingNamespaceRefusalsAreNotErrors(t *testing.T) {
	f := newFixture(t, newJob(2, 2))
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("namespace ns is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	f.mustSync()
	if got := f.reasons(); len(got) != 0 {
		t.Errorf("events %v", got)
	}
	if !f.c.expectations.satisfied("ns/j") {
		t.Error("expectations wait for pods never created")
	}
}

func TestSync_ReleaseOfAPodGoneOrChangedIsNotAnError(t *testing.T) {
	strayed := newPod("strayed", corev1.PodRunning)
	strayed.Labels = map[string]string{"app": "else"}
	f := newFixture(t, started(newJob(1, 1)), strayed)
	f.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "strayed", nil)
	})
	f.mustSync()
}
